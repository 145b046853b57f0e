// Command line of rocemu-perf, modelled on perftest (ib_write_bw & co):
//   rocemu-perf TEST [options] [SERVER_IP]
// Without SERVER_IP the process is the server.
#ifndef ROCEMU_VERBS_TOOLS_PERF_OPTIONS_H_
#define ROCEMU_VERBS_TOOLS_PERF_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rocemu::verbs::perf {

enum class Verb : uint8_t { kWrite, kRead, kSend, kAtomic };
enum class Mode : uint8_t { kBw, kLat };
enum class AtomicOp : uint8_t { kFetchAndAdd, kCmpAndSwap };
enum class Memory : uint8_t { kShm, kMalloc };

struct PerfOptions {
  Verb verb = Verb::kWrite;
  Mode mode = Mode::kBw;
  AtomicOp atomic_op = AtomicOp::kFetchAndAdd;
  Memory memory = Memory::kShm;
  // Message sizes to run, in order (one result line each).
  std::vector<uint64_t> sizes;
  uint64_t iters = 0;
  uint32_t num_qps = 1;
  uint32_t tx_depth = 0;
  // 0: the port's active MTU; else 256..4096.
  uint32_t mtu = 0;
  uint16_t tcp_port = 18515;
  // Empty: the library's default (ROCEMU_VERBS_SOCKET, /run/rocemu/...).
  std::string dev;
  std::string server_ip;  // empty: server
  bool verify = false;
  bool json = false;
  // sched_yield() after an empty poll instead of spinning on.
  bool yield = false;
  uint64_t seed = 1;
  // Seconds the client keeps trying to reach the server, and the bound on
  // every wait for the peer.
  uint32_t timeout_s = 30;

  bool is_server() const { return server_ip.empty(); }
};

// The name perftest gives the test ("write_bw", "atomic_lat", ...).
std::string TestName(Verb verb, Mode mode);
const char* AtomicOpName(AtomicOp op);

// Parses argv (argv[0] is the program). Defaults follow perftest: bw tests
// 65536 B, 5000 iterations, tx-depth 128; lat tests 2 B, 1000 iterations,
// tx-depth 1; atomics 8 B. `-a` runs 2^1..2^23 (or -a MIN:MAX, powers of
// two between). Errors name the offending option.
absl::StatusOr<PerfOptions> ParsePerfOptions(int argc, char** argv);
std::string PerfUsage(const char* argv0);

}  // namespace rocemu::verbs::perf

#endif  // ROCEMU_VERBS_TOOLS_PERF_OPTIONS_H_
