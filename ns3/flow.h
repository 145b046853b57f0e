// A flow of a fabric workload: `bytes` from host `src` to host `dst`,
// starting at `start_ns`, carried by RC WRITEs, SENDs or READs (or UD
// SENDs) as an application would post them.
#ifndef ROCEMU_NS3_FLOW_H_
#define ROCEMU_NS3_FLOW_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "nic/clock.h"

namespace rocemu::ns3sim {

enum class FlowOp : uint8_t {
  kWrite,   // src posts RDMA WRITEs into dst's memory
  kSend,    // src posts SENDs, dst posts receives
  kRead,    // dst posts RDMA READs of src's memory
  kUdSend,  // src posts UD SENDs of one MTU each to dst's UD QP
};
const char* FlowOpName(FlowOp op);
std::optional<FlowOp> FlowOpFromName(absl::string_view name);

struct FlowSpec {
  uint32_t src = 0;  // host indices; the data goes from src to dst
  uint32_t dst = 0;
  uint64_t bytes = 0;
  nic::TimeNs start_ns = 0;
  FlowOp op = FlowOp::kWrite;
  // Long-running flow: keeps its messages in flight until this time, then
  // drains (bytes is then ignored). 0: a flow of `bytes`.
  nic::TimeNs stop_ns = 0;
};

struct FlowResult {
  bool done = false;    // every message completed
  bool failed = false;  // a completion with an error status
  nic::TimeNs finish_ns = 0;
  uint64_t bytes_done = 0;  // payload completed (long flows: all of it)
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_FLOW_H_
