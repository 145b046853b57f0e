#include "nic/congestion_control.h"

#include <algorithm>

#include "pfc_ecn/time_units.h"

namespace rocemu::nic {

const pfc_ecn::DcqcnParams& DefaultDcqcnParams() {
  static const pfc_ecn::DcqcnParams kParams =
      pfc_ecn::DcqcnParams::Nvidia(100000);
  return kParams;
}

absl::Status CongestionConfig::Validate() const {
  if (roce_dscp > 63) return absl::InvalidArgumentError("roce_dscp > 63");
  if (roce_prio > 7) return absl::InvalidArgumentError("roce_prio > 7");
  if (cnp_queue_len == 0) {
    return absl::InvalidArgumentError("cnp_queue_len must be positive");
  }
  if (pfc_rx.port_rate_bps == 0) {
    return absl::InvalidArgumentError("PFC receive: port rate is 0");
  }
  absl::Status s = dcqcn.Validate();
  if (!s.ok()) return s;
  return dcqcn.np.Validate();
}

CongestionControl::CongestionControl(const CongestionConfig& config)
    : config_(config),
      np_min_gap_ns_(pfc_ecn::NpMinGapNs(config.dcqcn.np)),
      pfc_rx_(config.pfc_rx),
      cnps_(config.cnp_queue_len) {}

void CongestionControl::InitQp(Qp& qp) const {
  QpCongestion& cc = qp.cc_;
  cc.rp = pfc_ecn::ReactionPoint(&config_.dcqcn);
  cc.pacer = pfc_ecn::Pacer(
      uint64_t{config_.dcqcn.max_rate_mbps()} * pfc_ecn::kBpsPerMbps,
      config_.pacer_burst_bytes);
  cc.np = pfc_ecn::NpFlowState{};
  qp.pace_until_ = 0;
}

void CongestionControl::OnMacControl(const protocol::ParsedFrame& frame,
                                     TimeNs now) {
  if (frame.kind == protocol::FrameKind::kPfc) {
    pfc_rx_.OnPfcFrame(now, frame.pfc.enable_vector, frame.pfc.quanta);
  } else if (frame.kind == protocol::FrameKind::kPause) {
    pfc_rx_.OnPauseFrame(now, frame.pfc.quanta[0]);
  }
  RefreshPause(now);
}

void CongestionControl::OnCeMarked(Qp& qp, const protocol::ParsedFrame& frame,
                                   TimeNs now, DeviceCounters& counters) {
  ++counters.np_ecn_marked_roce_packets;
  if (!config_.np_enabled) return;
  if (!pfc_ecn::NpCnpDue(qp.cc_.np, np_min_gap_ns_, now)) return;
  if (cnp_count_ == cnps_.size()) {
    ++cnp_dropped_;
    return;
  }
  size_t tail = cnp_head_ + cnp_count_;
  if (tail >= cnps_.size()) tail -= cnps_.size();
  PendingCnp& c = cnps_[tail];
  // The CNP retraces the marked packet's path: back to its source, from the
  // address it was sent to.
  c.net = protocol::NetHeaders{};
  c.net.dst_mac = frame.net.src_mac;
  c.net.src_mac = frame.net.dst_mac;
  c.net.ipv6 = frame.net.ipv6;
  c.net.src_ip = frame.net.dst_ip;
  c.net.dst_ip = frame.net.src_ip;
  c.net.has_vlan = frame.net.has_vlan;
  c.net.vlan = frame.net.vlan;
  c.net.vlan.pcp = config_.dcqcn.np.np_cnp_prio;
  c.net.dscp = config_.dcqcn.np.np_cnp_dscp;
  c.net.ecn = 0b00;  // CNPs are not ECN-capable: nothing may mark them
  c.net.udp_src_port = qp.udp_sport_;
  c.dest_qp =
      qp.type() == QpType::kUd ? frame.hdr.deth.src_qp : qp.attr_.dest_qp_num;
  ++cnp_count_;
  ++counters.np_cnp_sent;
}

void CongestionControl::OnCnp(Qp& qp, TimeNs now, DeviceCounters& counters) {
  QpCongestion& cc = qp.cc_;
  if (!config_.dcqcn.enabled) {
    ++counters.rp_cnp_ignored;
    return;
  }
  ++counters.rp_cnp_handled;
  cc.rp.OnCnp(now);
  cc.pacer.SetRate(cc.rp.current_rate_bps());
}

uint8_t CongestionControl::RefreshPause(TimeNs now) {
  paused_mask_ = forced_ | pfc_rx_.PausedMask(now);
  pause_refreshed_at_ = now;
  return paused_mask_;
}

void CongestionControl::ForcePause(uint8_t priority, bool paused) {
  const uint8_t bit = static_cast<uint8_t>(1u << (priority & 7));
  forced_ = paused ? (forced_ | bit) : (forced_ & ~bit);
  paused_mask_ = forced_ | pfc_rx_.PausedMask(pause_refreshed_at_);
}

size_t CongestionControl::TransmitCnps(std::span<TxFrame> frames,
                                       DeviceCounters& counters) {
  const uint8_t prio = config_.dcqcn.np.np_cnp_prio;
  if ((paused_mask_ >> prio) & 1) return 0;
  size_t n = 0;
  while (n < frames.size() && cnp_count_ != 0) {
    const PendingCnp& c = cnps_[cnp_head_];
    TxFrame& f = frames[n];
    const size_t len = protocol::BuildCnp(
        c.net, c.dest_qp, protocol::kDefaultPKey, {f.data, f.capacity});
    if (++cnp_head_ == cnps_.size()) cnp_head_ = 0;
    --cnp_count_;
    if (len == 0) {
      ++counters.send_err;
      continue;
    }
    f.len = static_cast<uint32_t>(len);
    f.priority = prio;
    ++n;
  }
  return n;
}

void CongestionControl::OnRequestSent(Qp& qp, uint32_t frame_len, TimeNs now) {
  QpCongestion& cc = qp.cc_;
  // Until the first CNP the QP is unpaced (line rate).
  if (!cc.rp.active()) return;
  cc.rp.OnBytesSent(frame_len, now);  // also runs the timers due by now
  cc.pacer.SetRate(cc.rp.current_rate_bps());
  cc.pacer.OnSent(now, frame_len);
  qp.pace_until_ = cc.pacer.NextSendTime();
}

TimeNs CongestionControl::NextEventTime(TimeNs now) const {
  if (cnp_count_ != 0 &&
      ((paused_mask_ >> config_.dcqcn.np.np_cnp_prio) & 1) == 0) {
    return now;
  }
  if ((paused_mask_ & ~forced_) == 0) return pfc_ecn::kNever;
  // A pause that ended since the last refresh wakes the scheduler now.
  const TimeNs next = pfc_rx_.NextResumeTime(pause_refreshed_at_);
  return next == pfc_ecn::kNever ? now : std::max(next, now);
}

pfc_ecn::PortCongestionCounters CongestionControl::PortCounters(
    TimeNs now) const {
  pfc_ecn::PortCongestionCounters c;
  pfc_rx_.FillCounters(now, c);
  return c;
}

}  // namespace rocemu::nic
