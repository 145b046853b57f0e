// The reliability matrix's traffic: a stream of RC work requests of mixed
// sizes posted from device A of a MatrixPair with a bounded window, each
// checked on completion (wr_id exactly once, status, opcode, byte_len, and
// the bytes it moved), then a drain that proves no late or duplicate
// completion follows.
#ifndef ROCEMU_TESTS_SIM_RELIABILITY_WORKLOAD_H_
#define ROCEMU_TESTS_SIM_RELIABILITY_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nic/clock.h"
#include "tests/sim/matrix_pair.h"

namespace rocemu::sim {

enum class Workload : uint8_t {
  kWrite,   // RDMA WRITE A -> B
  kRead,    // RDMA READ of B's memory into A's
  kSend,    // SEND A -> B into posted receives
  kAtomic,  // FETCH_ADD and CMP_SWAP, alternating, on two words of B
  kMixed,   // all of the above interleaved on the one QP
};
const char* WorkloadName(Workload w);

struct WorkloadConfig {
  Workload workload = Workload::kWrite;
  // Data workloads stop posting once this many payload bytes are posted.
  uint64_t total_bytes = uint64_t{64} << 20;
  // Atomic workload: number of atomic operations.
  uint32_t atomic_ops = 4096;
  // Work requests outstanding at most (each owns one buffer slot).
  uint32_t window = 16;
  // Message sizes are log-uniform in [1, max_msg]; the first ones are the
  // edge sizes (1, MTU - 1, MTU, MTU + 1, max_msg).
  uint32_t max_msg = 1u << 20;
  uint64_t seed = 1;
  nic::TimeNs deadline_ns = 60'000'000'000;  // virtual
  size_t max_errors = 20;                    // errors kept as text
};

// Bytes each side's buffer must have for `config`.
size_t WorkloadBufferSize(const WorkloadConfig& config);

struct WorkloadResult {
  bool finished = false;  // every WR completed before the deadline
  uint64_t posted = 0;
  uint64_t data_bytes = 0;
  uint64_t atomics = 0;
  uint64_t send_completions = 0;  // on A
  uint64_t recv_completions = 0;  // on B
  uint64_t error_count = 0;
  std::vector<std::string> errors;  // the first max_errors
  nic::TimeNs virtual_ns = 0;
};

WorkloadResult RunWorkload(MatrixPair& pair, const WorkloadConfig& config);

}  // namespace rocemu::sim

#endif  // ROCEMU_TESTS_SIM_RELIABILITY_WORKLOAD_H_
