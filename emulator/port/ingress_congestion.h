// The congestion point a daemon port can put in front of its RNIC
// (config: ports[].congestion_point): the egress queue of the switch port
// that would feed this host, so that a bottleneck exists on links that have
// none (memif, veth, TAP). Built from the same pfc_ecn code the simulator
// uses: pfc_ecn::CongestionPoint drains the RoCE priority's frames at the
// configured rate and RED-marks ECT frames CE on dequeue; a
// pfc_ecn::PfcTransmitter watches its depth and asks for XOFF/XON towards
// the link's senders.
//
// Only the RoCE priority (traffic_class.roce_prio) is queued: frames of
// other priorities (CNPs on 6) and MAC Control frames pass ahead untouched,
// as a switch's strict-priority queue and its MAC would let them. The
// priority of a frame is its VLAN PCP, else its DSCP / 8 (ConnectX and most
// switches trust DSCP that way by default).
#ifndef ROCEMU_EMULATOR_PORT_INGRESS_CONGESTION_H_
#define ROCEMU_EMULATOR_PORT_INGRESS_CONGESTION_H_

#include <rte_mbuf.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "config/config.h"
#include "emulator/net/net_types.h"
#include "nic/clock.h"
#include "pfc_ecn/congestion_point.h"
#include "pfc_ecn/pfc_transmitter.h"

namespace rocemu::emulator {

class IngressCongestion {
 public:
  // nullptr when the port has no congestion point configured.
  static absl::StatusOr<std::unique_ptr<IngressCongestion>> Create(
      const config::Config& config, unsigned port);
  ~IngressCongestion();
  IngressCongestion(const IngressCongestion&) = delete;
  IngressCongestion& operator=(const IngressCongestion&) = delete;

  enum class Offer : uint8_t {
    kPass,     // not the queued priority: hand it to the RNIC now
    kQueued,   // the queue owns the mbuf until it departs
    kDropped,  // tail drop: counted; the caller frees it
  };
  // A received frame bound for the RNIC.
  Offer Enqueue(rte_mbuf* m, nic::TimeNs now);
  // Frames whose turn on the bottleneck came by `now`, CE set where RED
  // said so; the caller owns (and frees) them. At most out.size().
  // `marked`, if given (as long as out), gets for each frame 0, or the
  // queue's depth in bytes (at least 1) when this queue set CE.
  size_t Dequeue(nic::TimeNs now, std::span<rte_mbuf*> out,
                 uint32_t* marked = nullptr);
  // The queue's depth and capacity in bytes (a tail drop's verdict).
  uint64_t depth_bytes() const { return queue_.depth_bytes(); }
  uint64_t capacity_bytes() const { return capacity_bytes_; }
  // A PFC frame (60 bytes) to send now, written to `out`; 0 if none.
  size_t PollPfc(nic::TimeNs now, const MacAddr& src, std::span<uint8_t> out);
  // When Dequeue or PollPfc next has something to do; kNever if nothing.
  nic::TimeNs NextEventTime() const;

  uint8_t priority() const { return priority_; }
  // {"priority":..,"rate_mbps":..,"depth_bytes":..,"enqueued":..,
  //  "ecn_marked":..,"tail_drops":..,...,"tx_prioN_pause":..}: the
  //  counters view's "congestion_point".
  nlohmann::ordered_json StateJson() const;
  const pfc_ecn::CongestionPointCounters& counters() const {
    return queue_.counters();
  }
  uint64_t tx_prio_pause() const {
    return pfc_ ? pfc_->tx_prio_pause(priority_) : 0;
  }
  bool pfc_asserted() const { return pfc_ && pfc_->IsAsserted(priority_); }

 private:
  IngressCongestion(const pfc_ecn::CongestionPointConfig& cp, uint8_t priority,
                    uint32_t rate_mbps);

  pfc_ecn::CongestionPoint<rte_mbuf*> queue_;
  std::unique_ptr<pfc_ecn::PfcTransmitter> pfc_;
  uint8_t priority_;
  uint32_t rate_mbps_;
  uint64_t capacity_bytes_;
  // Departures are timed from when the queue last became busy, not from
  // when the loop happened to look: a late poll does not slow the drain.
  nic::TimeNs busy_since_ = 0;
};

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_PORT_INGRESS_CONGESTION_H_
