// rocemu-perf's out-of-band exchange over TCP, as perftest does it: the
// client sends its parameters, both sides swap what the peer needs to reach
// each QP (QPN, PSN, GID, R_Key, address, length), and then use the
// connection as a barrier between sizes and to confirm the end (each side
// tells the other whether its checks passed). Fixed-layout host-order
// messages with a magic and version: both ends are rocemu-perf of the same
// version on the same kind of host.
#ifndef ROCEMU_VERBS_TOOLS_PERF_EXCHANGE_H_
#define ROCEMU_VERBS_TOOLS_PERF_EXCHANGE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rocemu::verbs::perf {

inline constexpr uint32_t kExchangeMagic = 0x52505246;  // "RPRF"
inline constexpr uint32_t kExchangeVersion = 1;
inline constexpr size_t kMaxSizes = 32;

struct ParamsMsg {
  uint32_t magic = kExchangeMagic;
  uint32_t version = kExchangeVersion;
  uint8_t verb = 0;
  uint8_t mode = 0;
  uint8_t atomic_op = 0;
  uint8_t verify = 0;
  uint8_t memory = 0;
  uint8_t pad[3] = {};
  uint32_t num_qps = 0;
  uint32_t tx_depth = 0;
  uint32_t mtu = 0;
  uint32_t num_sizes = 0;
  uint64_t iters = 0;
  uint64_t seed = 0;
  uint64_t sizes[kMaxSizes] = {};
};

struct QpInfoMsg {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint8_t gid[16] = {};
  uint32_t rkey = 0;
  uint32_t active_mtu = 0;  // bytes
  uint64_t rx_addr = 0;     // the region the peer writes to / reads from
  uint64_t rx_len = 0;
};

enum class SyncKind : uint32_t {
  kReady = 1,  // set up for the next size: go
  kRound,      // write --verify: messages [0, value) landed, check them
  kEnd,        // this size is over: status and counts
};

struct SyncMsg {
  uint32_t magic = kExchangeMagic;
  SyncKind kind = SyncKind::kReady;
  uint32_t ok = 1;
  uint32_t pad = 0;
  uint64_t value = 0;       // kRound: messages sent; kEnd: iterations done
  int64_t bad_offset = -1;  // first bad byte (or atomic index) on failure
  char what[96] = {};       // failure text
};

class Channel {
 public:
  // Server: listens on `port` (all addresses) and accepts one client.
  static absl::StatusOr<Channel> Accept(uint16_t port, int timeout_ms);
  // Client: retries until the server listens or `timeout_ms` passes.
  static absl::StatusOr<Channel> Connect(const std::string& host, uint16_t port,
                                         int timeout_ms);
  Channel(Channel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Channel& operator=(Channel&& o) noexcept;
  ~Channel();

  absl::Status SendBytes(const void* p, size_t n);
  // timeout_ms < 0: wait as long as the peer's connection lives.
  absl::Status RecvBytes(void* p, size_t n, int timeout_ms);

  template <typename T>
  absl::Status Send(const T& m) {
    static_assert(std::is_trivially_copyable_v<T>);
    return SendBytes(&m, sizeof(m));
  }
  template <typename T>
  absl::Status Recv(T* m, int timeout_ms) {
    static_assert(std::is_trivially_copyable_v<T>);
    return RecvBytes(m, sizeof(*m), timeout_ms);
  }
  // Receives a SyncMsg of `kind`; a peer's failure report becomes an error
  // carrying its text.
  absl::StatusOr<SyncMsg> Expect(SyncKind kind, int timeout_ms);
  int fd() const { return fd_; }

 private:
  explicit Channel(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace rocemu::verbs::perf

#endif  // ROCEMU_VERBS_TOOLS_PERF_EXCHANGE_H_
