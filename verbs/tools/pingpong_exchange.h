// The out-of-band TCP exchange of ibv_rc_pingpong / ibv_ud_pingpong: the
// client sends its 52-byte address, the server (which has already moved its
// QP to RTS with the client's address) answers with its own, the client
// answers "done" and both close. The server must be ready to receive before
// the client learns its address, because the client sends its first
// message as soon as it has connected its own QP.
#ifndef ROCEMU_VERBS_TOOLS_PINGPONG_EXCHANGE_H_
#define ROCEMU_VERBS_TOOLS_PINGPONG_EXCHANGE_H_

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "verbs/tools/pingpong_dest.h"

namespace rocemu::pingpong {

// timeout_ms < 0 waits for ever (as the rdma-core tools do); otherwise each
// wait (accept, connect, read, write) gives up after timeout_ms.
absl::StatusOr<Dest> ClientExchange(const std::string& server, uint16_t port,
                                    const Dest& mine, int timeout_ms);

class ExchangeListener {
 public:
  // Binds every local address on `port` (0: an ephemeral port, for tests).
  static absl::StatusOr<ExchangeListener> Listen(uint16_t port);
  ExchangeListener(ExchangeListener&& other) noexcept;
  ExchangeListener& operator=(ExchangeListener&&) = delete;
  ~ExchangeListener();

  uint16_t port() const { return port_; }

  // Accepts one client (and stops listening), reads its address, calls
  // `connect` with it, then answers with `mine` and waits for "done". An
  // error of `connect` is returned as is and the client gets no answer.
  absl::StatusOr<Dest> Serve(
      const Dest& mine, absl::FunctionRef<absl::Status(const Dest&)> connect,
      int timeout_ms);

 private:
  ExchangeListener(int fd, uint16_t port) : fd_(fd), port_(port) {}
  int fd_;
  uint16_t port_;
};

}  // namespace rocemu::pingpong

#endif  // ROCEMU_VERBS_TOOLS_PINGPONG_EXCHANGE_H_
