#include "nic/gsi.h"

#include <algorithm>
#include <cstring>

#include "nic/cm/cm_agent.h"
#include "protocol/opcode.h"

namespace rocemu::nic {

using protocol::MadHeader;
namespace mad_method = protocol::mad_method;
namespace mad_status = protocol::mad_status;

Gsi::Gsi(const protocol::MacAddr& mac, const PKeyTable& pkeys,
         const GidTable& gids, DeviceCounters& counters,
         uint32_t queue_capacity)
    : mac_(mac),
      pkeys_(pkeys),
      gids_(gids),
      counters_(counters),
      queue_(std::max<uint32_t>(1, queue_capacity)) {}

bool Gsi::MatchPKey(uint16_t pkey, uint16_t* index) const {
  for (uint16_t i = 0; i < pkeys_.capacity(); ++i) {
    if (PKeyMatch(pkeys_.Get(i), pkey)) {
      *index = i;
      return true;
    }
  }
  return false;
}

void Gsi::Receive(const protocol::ParsedFrame& f, TimeNs now) {
  if (f.hdr.bth.opcode != static_cast<uint8_t>(protocol::Opcode::kUdSendOnly)) {
    ++counters_.mad_rx_drop_malformed;
    return;
  }
  uint16_t pkey_index = 0;
  if (!MatchPKey(f.hdr.bth.pkey, &pkey_index)) {
    ++counters_.bad_pkey_cntr;
    ++counters_.mad_rx_drop_pkey;
    return;
  }
  if (f.hdr.deth.qkey != protocol::kGsiQkey) {
    ++counters_.qkey_viol_cntr;
    ++counters_.mad_rx_drop_qkey;
    return;
  }
  // A MAD is exactly 256 bytes (RMPP segments included); anything else sent
  // to QP1 is not a MAD.
  if (f.payload.size() != protocol::kMadSize) {
    ++counters_.mad_rx_drop_malformed;
    return;
  }
  ReceivedMad m;
  m.mad = f.payload;
  protocol::ParseMadHeader(m.mad, &m.hdr);
  m.from.mac = f.net.src_mac;
  m.from.gid = f.net.src_ip;
  m.from.sgid_index =
      static_cast<uint8_t>(gids_.Find(f.net.dst_ip).value_or(0));
  m.from.pkey = f.hdr.bth.pkey;
  m.from.pkey_index = pkey_index;
  m.from.qpn = f.hdr.deth.src_qp;
  m.from.qkey = protocol::kGsiQkey;
  m.from.traffic_class = static_cast<uint8_t>(f.net.dscp << 2);
  m.from.flow_label = f.net.flow_label;
  ++counters_.mad_rcvd;

  const MadHeader& h = m.hdr;
  // A MAD whose base version is unknown cannot be answered in a format the
  // sender understands: dropped (as Linux's MAD layer does).
  if (h.base_version != protocol::kMadBaseVersion) {
    ++counters_.mad_rx_drop_bad_version;
    return;
  }
  // Only requests that expect a response (Get, Set) get the error status of
  // 13.4.7; anything else nobody serves is dropped.
  const bool request =
      h.method == mad_method::kGet || h.method == mad_method::kSet;
  uint16_t status = mad_status::kSuccess;
  if (h.mgmt_class != protocol::mgmt_class::kCm || cm_ == nullptr ||
      h.class_version != protocol::kCmClassVersion) {
    status = mad_status::kBadVersion;
  } else if (h.method != mad_method::kSend) {
    status = mad_status::kUnsupportedMethod;
  }
  if (status != mad_status::kSuccess) {
    if (request) {
      Reject(m, status);
    } else {
      ++counters_.mad_rx_drop_unsupported;
    }
    return;
  }
  // CM messages travel between the two ports' QP1s; a reply would go
  // nowhere else.
  if (m.from.qpn != protocol::kGsiQpn) {
    ++counters_.mad_rx_drop_malformed;
    return;
  }
  cm_->OnMad(m, now);
}

void Gsi::Reject(const ReceivedMad& m, uint16_t status) {
  std::array<uint8_t, protocol::kMadSize> resp;
  std::memcpy(resp.data(), m.mad.data(), resp.size());
  MadHeader h = m.hdr;
  h.method = mad_method::kGetResp;
  h.status = status;
  protocol::EncodeMadHeader(h, resp);
  if (Send(m.from, resp)) ++counters_.mad_err_resp_sent;
}

bool Gsi::Send(const MadAddress& to, std::span<const uint8_t> mad) {
  if (count_ == queue_.size() || mad.size() != protocol::kMadSize) {
    ++counters_.mad_tx_drop;
    return false;
  }
  Pending& p = queue_[(head_ + count_) % queue_.size()];
  p.to = to;
  std::memcpy(p.mad.data(), mad.data(), protocol::kMadSize);
  ++count_;
  return true;
}

size_t Gsi::Transmit(std::span<TxFrame> frames) {
  size_t n = 0;
  while (n < frames.size() && count_ != 0) {
    const Pending& p = queue_[head_];
    protocol::FrameSpec spec;
    protocol::NetHeaders& net = spec.net;
    net.src_mac = mac_;
    net.dst_mac = p.to.mac;
    net.ipv6 = !GidIsIpv4Mapped(p.to.gid);
    net.src_ip = gids_.Get(p.to.sgid_index).value_or(Gid{});
    net.dst_ip = p.to.gid;
    // MADs are not part of any congestion-controlled flow: Not-ECT, the
    // path's DSCP (rxe sends its CM MADs with TOS 0).
    net.dscp = p.to.traffic_class >> 2;
    net.ecn = 0;
    net.ttl = p.to.hop_limit;
    net.flow_label = p.to.flow_label;
    net.udp_src_port = kGsiUdpSourcePort;
    if (vlan_.has_value()) {
      net.has_vlan = true;
      net.vlan.vid = *vlan_;
    }
    protocol::Bth& bth = spec.hdr.bth;
    bth.opcode = static_cast<uint8_t>(protocol::Opcode::kUdSendOnly);
    bth.mig_req = false;
    bth.pkey = p.to.pkey;
    bth.dest_qp = p.to.qpn;
    bth.ack_req = true;
    bth.psn = psn_;
    spec.hdr.deth.qkey = p.to.qkey;
    spec.hdr.deth.src_qp = protocol::kGsiQpn;
    TxFrame& f = frames[n];
    protocol::BuildError err = protocol::BuildError::kOk;
    const size_t len = protocol::BuildRoceFrame(
        spec, p.mad, std::span<uint8_t>(f.data, f.capacity), &err);
    head_ = (head_ + 1) % static_cast<uint32_t>(queue_.size());
    --count_;
    if (len == 0) {
      ++counters_.mad_tx_drop;
      continue;
    }
    psn_ = (psn_ + 1) & protocol::kPsnMask;
    f.len = static_cast<uint32_t>(len);
    f.priority = 0;
    ++counters_.mad_sent;
    ++n;
  }
  return n;
}

}  // namespace rocemu::nic
