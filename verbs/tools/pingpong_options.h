// Command line of rocemu-pingpong: `rocemu-pingpong rc|ud [options]
// [SERVER]`, with the options of ibv_rc_pingpong (rc) and ibv_ud_pingpong
// (ud), same letters, long names and defaults, so scripts written for the
// rdma-core tools run unchanged. -d takes a device name (as ibv's) or a
// daemon's verbs socket path; --verify and --timeout are rocemu's
// additions.
#ifndef ROCEMU_VERBS_TOOLS_PINGPONG_OPTIONS_H_
#define ROCEMU_VERBS_TOOLS_PINGPONG_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace rocemu::pingpong {

enum class Transport : uint8_t { kRc, kUd };

struct Options {
  Transport transport = Transport::kRc;
  std::string device;         // -d: device name or verbs socket path; "": first
  uint16_t tcp_port = 18515;  // -p
  uint8_t ib_port = 1;        // -i
  uint32_t size = 4096;       // -s (ud: 1024)
  uint32_t mtu = 1024;        // -m, rc only: path MTU in bytes
  uint32_t rx_depth = 500;    // -r
  uint32_t iters = 1000;      // -n
  uint8_t sl = 0;             // -l
  bool events = false;        // -e: sleep on the completion channel
  int gid_index = -1;         // -g; -1: send an all-zero GID, as rdma-core
  bool chk = false;           // -c: the rdma-core page check
  // rc only, as in ibv_rc_pingpong:
  bool odp = false;  // -o: malloc'd memory (process memory, not pinned)
  bool implicit_odp = false;   // -O
  bool prefetch = false;       // -P
  bool timestamps = false;     // -t
  bool device_memory = false;  // -j
  bool new_send = false;       // -N
  // rocemu's additions:
  bool verify = false;  // --verify: check every byte of every message
  int timeout_ms = -1;  // --timeout=SECONDS: bound every wait; -1: none
  std::string server;   // empty: this side is the server
};

// argv[1] is the transport. Errors are one line, for "usage" output.
absl::StatusOr<Options> ParseOptions(int argc, char** argv);
std::string Usage(const char* argv0);

}  // namespace rocemu::pingpong

#endif  // ROCEMU_VERBS_TOOLS_PINGPONG_OPTIONS_H_
