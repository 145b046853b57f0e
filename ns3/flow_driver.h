// The hosts' applications: each host has a protection domain, one
// completion queue and a memory region, as a verbs program allocates them;
// each flow gets its own connection, set up as applications set up RC
// QPs after exchanging QPNs and GIDs out of band (create, RESET -> INIT ->
// RTR -> RTS on both sides towards the peer), then the requester keeps
// `outstanding` messages of up to `message_bytes` posted until the flow's
// bytes are done and its completions have arrived. That instant is the
// flow's completion time (what the application sees); both QPs are then
// destroyed. UD flows go over one UD QP per host, one MTU per SEND with
// the flow id as immediate data; they complete when the receiver has
// every byte (a lost datagram leaves the flow unfinished).
//
// Memory regions of all hosts cover one shared arena unless data is
// checked: payload bytes then cost nothing per host, which is what lets a
// fabric of thousands of hosts fit in memory.
#ifndef ROCEMU_NS3_FLOW_DRIVER_H_
#define ROCEMU_NS3_FLOW_DRIVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "nic/qp_attr.h"
#include "ns3/flow.h"
#include "ns3/ptr.h"
#include "ns3/rnic_host.h"

namespace rocemu::ns3sim {

struct FlowDriverConfig {
  uint32_t message_bytes = 64 * 1024;
  uint32_t outstanding = 8;  // messages in flight per flow
  nic::PathMtu mtu = nic::PathMtu::kMtu1024;
  uint32_t cq_depth = 256;
  uint8_t timeout = 14;  // local ACK timeout code (4.096 us << 14 = 67 ms)
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  // UD: receive WQEs each host keeps posted on its UD QP.
  uint32_t ud_recv_depth = 256;
  // Arena the memory regions cover: one for all hosts, or one per host
  // (then each flow's payload is a pattern the receiver's memory can be
  // checked against).
  bool per_host_memory = false;
};

class FlowDriver {
 public:
  using FlowDoneFn = std::function<void(uint32_t flow)>;

  FlowDriver(const FlowDriverConfig& config,
             std::vector<ns3::Ptr<RnicHost>> hosts);
  ~FlowDriver();

  // PD, CQ and MR on every host (and its UD QP when `ud` is set).
  absl::Status Setup(bool ud);
  // Opens `n` RC connections between random pairs of distinct hosts and
  // leaves them idle in RTS, as applications keep connection pools (the
  // memory each QP costs, and a load on the RNICs' QP tables).
  absl::Status OpenIdleConnections(uint32_t n, uint64_t seed);
  // Schedules every flow's start; `on_done` is called as each finishes.
  absl::Status Schedule(std::vector<FlowSpec> flows, FlowDoneFn on_done);

  const std::vector<FlowSpec>& flows() const { return specs_; }
  const FlowResult& result(uint32_t flow) const { return results_[flow]; }
  uint32_t finished() const { return finished_; }
  uint32_t started() const { return started_; }
  // Payload delivered so far per flow (bytes the requester has seen
  // complete; UD: received), for rate time series.
  uint64_t progress(uint32_t flow) const;
  // The QPs each flow's requester and responder use (0 before start).
  uint32_t requester_qpn(uint32_t flow) const;
  // Peak number of connected QPs on one host, and in the whole fabric.
  uint32_t max_host_qps() const { return max_host_qps_; }
  uint64_t max_fabric_qps() const { return max_fabric_qps_; }
  // With per_host_memory: whether dst's memory holds what src sent for
  // every finished WRITE/SEND/READ flow of up to message_bytes.
  bool CheckPayloads() const;

 private:
  struct Host;
  struct Flow;

  void Start(uint32_t flow);
  void Pump(uint32_t flow, nic::TimeNs now);
  void OnHostEvent(uint32_t host, nic::TimeNs now);
  void Finish(uint32_t flow, nic::TimeNs now, bool failed);
  absl::StatusOr<uint32_t> CreateRcQp(Host& h, uint32_t send_wr,
                                      uint32_t recv_wr);
  absl::Status Connect(Host& self, uint32_t qpn, const Host& peer,
                       uint32_t peer_qpn);
  absl::Status PostRecv(Host& h, uint32_t qpn, uint64_t wr_id, uint32_t len);
  uint8_t* Memory(uint32_t host);

  FlowDriverConfig config_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<uint8_t> shared_arena_;
  std::vector<FlowSpec> specs_;
  std::vector<Flow> flows_;
  std::vector<FlowResult> results_;
  FlowDoneFn on_done_;
  uint32_t finished_ = 0;
  uint32_t started_ = 0;
  uint32_t max_host_qps_ = 0;
  uint64_t fabric_qps_ = 0;
  uint64_t max_fabric_qps_ = 0;
};

}  // namespace rocemu::ns3sim

#endif  // ROCEMU_NS3_FLOW_DRIVER_H_
