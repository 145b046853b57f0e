// The daemon's local control plane, polled from the poll loop about once a
// millisecond (never per packet): a Unix stream socket speaking one JSON
// object per line ({"cmd":"counters"} -> one JSON line back), and an
// optional Prometheus text endpoint on 127.0.0.1.
#ifndef ROCEMU_EMULATOR_CONTROL_CONTROL_SERVER_H_
#define ROCEMU_EMULATOR_CONTROL_CONTROL_SERVER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "emulator/control/control_request.h"

namespace rocemu::emulator {

// The reply to a request that failed: {"error":"<message>"}, the message
// escaped as every control reply is (bytes that are not UTF-8 as U+FFFD).
std::string JsonError(std::string_view message);

class ControlServer {
 public:
  using Handler = std::function<std::string(std::string_view request)>;

  ~ControlServer();
  // Creates the socket (and its directory), refusing to steal a socket a
  // live daemon is listening on; applies `mode` to the socket file.
  absl::Status Listen(const std::string& path, unsigned mode, Handler handler);
  // Accepts, reads and answers whatever is ready; never blocks.
  void Poll();
  void Close();

 private:
  struct Client {
    int fd;
    std::string in;
    // Reply bytes the socket did not take yet (large counters with many
    // QPs exceed its buffer); sent on later polls, never waited for.
    std::string out;
    bool closing = false;  // close once `out` is sent
  };
  // Sends what the socket takes now; false when the client is gone.
  static bool Flush(Client& c);
  int fd_ = -1;
  std::string path_;
  Handler handler_;
  std::vector<Client> clients_;
};

class MetricsServer {
 public:
  using Handler = std::function<std::string()>;

  ~MetricsServer();
  absl::Status Listen(uint16_t port, Handler handler);
  void Poll();
  void Close();

 private:
  int fd_ = -1;
  Handler handler_;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CONTROL_CONTROL_SERVER_H_
