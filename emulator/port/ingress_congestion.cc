#include "emulator/port/ingress_congestion.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pfc_ecn/counters.h"
#include "protocol/checksum.h"
#include "protocol/ethernet.h"
#include "protocol/pfc.h"

namespace rocemu::emulator {
namespace {

using protocol::kEtherTypeIpv4;
using protocol::kEtherTypeIpv6;
using protocol::kEtherTypeVlan;
// Frames the queue can hold whatever their size: the port's mbuf pool is
// shared with the RX ring and the TX path, so it cannot all wait here.
constexpr uint32_t kMaxQueuedFrames = 4096;

uint16_t Be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

// Where a frame's IP header is and what class it is in. False: not IP.
struct Classified {
  uint8_t priority = 0;
  pfc_ecn::Ecn ecn = pfc_ecn::Ecn::kNotEct;
  size_t l3 = 0;
  bool ipv6 = false;
};

bool Classify(const uint8_t* d, size_t len, Classified* c) {
  if (len < 14) return false;
  size_t off = 12;
  uint16_t type = Be16(d + off);
  bool tagged = false;
  uint8_t pcp = 0;
  if (type == kEtherTypeVlan) {
    if (len < 18) return false;
    tagged = true;
    pcp = d[14] >> 5;
    off += 4;
    type = Be16(d + off);
  }
  off += 2;
  uint8_t tc;
  if (type == kEtherTypeIpv4) {
    if (len < off + 20) return false;
    tc = d[off + 1];
  } else if (type == kEtherTypeIpv6) {
    if (len < off + 40) return false;
    tc = static_cast<uint8_t>((d[off] & 0x0F) << 4 | d[off + 1] >> 4);
    c->ipv6 = true;
  } else {
    return false;
  }
  c->l3 = off;
  c->ecn = static_cast<pfc_ecn::Ecn>(tc & 3);
  c->priority = tagged ? pcp : static_cast<uint8_t>(tc >> 5);  // DSCP / 8
  return true;
}

// Sets CE; IPv4 gets its header checksum redone (the ICRC masks the ECN
// bits, so the RoCE packet stays valid).
void MarkCe(uint8_t* d, size_t len) {
  Classified c;
  if (!Classify(d, len, &c)) return;
  uint8_t* ip = d + c.l3;
  if (c.ipv6) {
    ip[1] |= 0x30;
    return;
  }
  ip[1] |= 0x03;
  const size_t ihl = (ip[0] & 0x0F) * 4u;
  if (ihl < 20 || c.l3 + ihl > len) return;
  ip[10] = ip[11] = 0;
  const uint16_t csum = protocol::Ipv4HeaderChecksum({ip, ihl});
  ip[10] = static_cast<uint8_t>(csum >> 8);
  ip[11] = static_cast<uint8_t>(csum);
}

}  // namespace

absl::StatusOr<std::unique_ptr<IngressCongestion>> IngressCongestion::Create(
    const config::Config& config, unsigned port) {
  const config::PortConfig& p = config.ports.at(port);
  const config::CongestionPointPortConfig& c = p.congestion_point;
  if (!c.enabled) return std::unique_ptr<IngressCongestion>();
  pfc_ecn::CongestionPointConfig cp;
  cp.drain_rate_bytes_per_sec = uint64_t{c.rate_mbps} * 1000 * 1000 / 8;
  cp.capacity_bytes = c.buffer_bytes;
  cp.capacity_packets =
      std::min<uint32_t>(kMaxQueuedFrames, std::max(c.buffer_bytes / 64, 1u));
  cp.ecn_marking = config.ecn.enabled;
  cp.red.kmin_bytes = config.ecn.kmin_bytes;
  cp.red.kmax_bytes = config.ecn.kmax_bytes;
  cp.red.pmax = config.ecn.pmax_percent / 100.0;
  cp.seed = port + 1;
  if (absl::Status s = cp.Validate(); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("port ", p.name, ": congestion_point: ", s.message()));
  }
  const uint8_t prio = p.traffic_class.roce_prio;
  std::unique_ptr<IngressCongestion> ic(
      new IngressCongestion(cp, prio, c.rate_mbps));
  if (c.pfc && config.pfc.enabled[prio]) {
    pfc_ecn::PfcTransmitterConfig t;
    t.port_rate_bps = uint64_t{p.link_speed_mbps} * pfc_ecn::kBpsPerMbps;
    t.pfc_enable = static_cast<uint8_t>(1u << prio);
    t.thresholds[prio] = {config.pfc.xoff_bytes, config.pfc.xon_bytes};
    t.pause_quanta = config.pfc.pause_quanta;
    if (absl::Status s = t.Validate(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "port ", p.name, ": congestion_point pfc: ", s.message()));
    }
    ic->pfc_ = std::make_unique<pfc_ecn::PfcTransmitter>(t);
    ic->queue_.AttachPfc(ic->pfc_.get(), prio);
  }
  return ic;
}

IngressCongestion::IngressCongestion(const pfc_ecn::CongestionPointConfig& cp,
                                     uint8_t priority, uint32_t rate_mbps)
    : queue_(cp),
      priority_(priority),
      rate_mbps_(rate_mbps),
      capacity_bytes_(cp.capacity_bytes) {}

IngressCongestion::~IngressCongestion() {
  while (queue_.depth_packets() > 0) {
    std::optional<pfc_ecn::Departure<rte_mbuf*>> d =
        queue_.Dequeue(queue_.NextDequeueTime());
    if (!d.has_value()) break;
    rte_pktmbuf_free(d->handle);
  }
}

IngressCongestion::Offer IngressCongestion::Enqueue(rte_mbuf* m,
                                                    nic::TimeNs now) {
  Classified c;
  if (!Classify(rte_pktmbuf_mtod(m, const uint8_t*), rte_pktmbuf_data_len(m),
                &c) ||
      c.priority != priority_) {
    return Offer::kPass;
  }
  if (queue_.depth_packets() == 0) busy_since_ = now;
  if (queue_.Enqueue(m, rte_pktmbuf_pkt_len(m), c.ecn) ==
      pfc_ecn::EnqueueResult::kTailDrop) {
    return Offer::kDropped;
  }
  return Offer::kQueued;
}

size_t IngressCongestion::Dequeue(nic::TimeNs now, std::span<rte_mbuf*> out,
                                  uint32_t* marked) {
  size_t n = 0;
  while (n < out.size()) {
    const nic::TimeNs t = std::max(queue_.NextDequeueTime(), busy_since_);
    if (t > now) break;
    std::optional<pfc_ecn::Departure<rte_mbuf*>> d = queue_.Dequeue(t);
    if (!d.has_value()) break;
    if (d->marked) {
      MarkCe(rte_pktmbuf_mtod(d->handle, uint8_t*),
             rte_pktmbuf_data_len(d->handle));
    }
    if (marked != nullptr) {
      marked[n] = d->marked ? static_cast<uint32_t>(
                                  std::max<uint64_t>(1, queue_.depth_bytes()))
                            : 0;
    }
    out[n++] = d->handle;
  }
  return n;
}

size_t IngressCongestion::PollPfc(nic::TimeNs now, const MacAddr& src,
                                  std::span<uint8_t> out) {
  if (pfc_ == nullptr) return 0;
  std::optional<pfc_ecn::PfcFrameRequest> r = pfc_->Poll(now);
  if (!r.has_value()) return 0;
  protocol::PfcInfo info;
  info.enable_vector = r->enable_vector;
  info.quanta = r->quanta;
  return protocol::BuildPfcFrame(src, info, out);
}

nic::TimeNs IngressCongestion::NextEventTime() const {
  nic::TimeNs t = queue_.NextDequeueTime();
  if (t != nic::kNever) t = std::max(t, busy_since_);
  if (pfc_ != nullptr) t = std::min(t, pfc_->NextEventTime());
  return t;
}

nlohmann::ordered_json IngressCongestion::StateJson() const {
  const pfc_ecn::CongestionPointCounters& c = queue_.counters();
  nlohmann::ordered_json j = {{"priority", priority_},
                              {"rate_mbps", rate_mbps_},
                              {"depth_bytes", queue_.depth_bytes()},
                              {"enqueued", c.enqueued_packets},
                              {"dequeued", c.dequeued_packets},
                              {"dequeued_bytes", c.dequeued_bytes},
                              {"ecn_marked", c.ecn_marked_packets},
                              {"tail_drops", c.tail_drop_packets},
                              {"max_depth_bytes", c.max_depth_bytes},
                              {"pfc_asserted", pfc_asserted()}};
  j[absl::StrCat("tx_prio", static_cast<int>(priority_), "_pause")] =
      tx_prio_pause();
  return j;
}

}  // namespace rocemu::emulator
