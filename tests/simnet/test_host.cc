#include "tests/simnet/test_host.h"

#include <algorithm>
#include <cstring>

namespace rocemu::simnet {

namespace {

void Store32(uint8_t* p, uint32_t v) {
  Store16(p, static_cast<uint16_t>(v >> 16));
  Store16(p + 2, static_cast<uint16_t>(v));
}
void Store64(uint8_t* p, uint64_t v) {
  Store32(p, static_cast<uint32_t>(v >> 32));
  Store32(p + 4, static_cast<uint32_t>(v));
}
uint32_t Load32(const uint8_t* p) {
  return (static_cast<uint32_t>(Load16(p)) << 16) | Load16(p + 2);
}
uint64_t Load64(const uint8_t* p) {
  return (static_cast<uint64_t>(Load32(p)) << 32) | Load32(p + 4);
}

}  // namespace

size_t TestHost::AddStream(const StreamSpec& spec) {
  streams_.push_back(Stream{spec, 0, spec.start});
  return streams_.size() - 1;
}

void TestHost::SendRaw(uint16_t port, std::span<const uint8_t> frame,
                       nic::TimeNs at) {
  Raw r{port, at, std::vector<uint8_t>(frame.begin(), frame.end())};
  auto it =
      std::upper_bound(raw_.begin(), raw_.end(), at,
                       [](nic::TimeNs t, const Raw& x) { return t < x.at; });
  raw_.insert(it, std::move(r));
}

size_t TestHost::BuildTestFrame(const StreamSpec& spec, uint64_t seq,
                                std::span<uint8_t> out) {
  const size_t tag = spec.vlan_pcp >= 0 ? kVlanTagLen : 0;
  const size_t len = std::max<size_t>(spec.frame_len, kTestFrameMinLen + tag);
  if (out.size() < len) return 0;
  uint8_t* p = out.data();
  std::memcpy(p, spec.dst_mac.data(), 6);
  std::memcpy(p + 6, spec.src_mac.data(), 6);
  size_t off = 12;
  if (tag) {
    Store16(p + off, kEtherTypeVlan);
    Store16(p + off + 2, static_cast<uint16_t>((spec.vlan_pcp & 7) << 13));
    off += kVlanTagLen;
  }
  Store16(p + off, kEtherTypeIpv4);
  off += 2;
  uint8_t* ip = p + off;
  const size_t ip_len = len - off;
  std::memset(ip, 0, 28);
  ip[0] = 0x45;
  ip[1] = static_cast<uint8_t>((spec.dscp << 2) | (spec.ecn & 3));
  Store16(ip + 2, static_cast<uint16_t>(ip_len));
  Store16(ip + 4, static_cast<uint16_t>(seq));
  ip[6] = 0x40;  // DF
  ip[8] = 64;
  ip[9] = 17;  // UDP
  Store32(ip + 12, 0x0A000000u | (spec.src_mac[5]));
  Store32(ip + 16, 0x0A000000u | (spec.dst_mac[5]));
  Store16(ip + 10, Ipv4HeaderChecksum({ip, 20}));
  uint8_t* udp = ip + 20;
  Store16(udp, static_cast<uint16_t>(0xC000 | (spec.flow & 0x3FFF)));
  Store16(udp + 2, kTestUdpPort);
  Store16(udp + 4, static_cast<uint16_t>(ip_len - 20));
  Store16(udp + 6, 0);  // no checksum (allowed over IPv4)
  uint8_t* body = udp + 8;
  Store32(body, spec.flow);
  Store64(body + 4, seq);
  // A filler that differs between sequence numbers but costs one memset.
  std::memset(body + 12, static_cast<int>(seq * 31 + 7), ip_len - 28 - 12);
  return len;
}

bool TestHost::done_sending() const {
  if (!raw_.empty()) return false;
  for (const Stream& s : streams_) {
    if (s.sent < s.spec.count) return false;
  }
  return true;
}

uint64_t TestHost::received_bytes(uint32_t flow) const {
  auto it = flow_bytes_.find(flow);
  return it == flow_bytes_.end() ? 0 : it->second;
}

void TestHost::Receive(uint16_t port, std::span<const nic::RxFrame> frames,
                       nic::TimeNs now) {
  for (const nic::RxFrame& f : frames) {
    Arrival a;
    a.time = now;
    a.port = port;
    a.len = f.len;
    const std::span<const uint8_t> b = f.bytes();
    MacControl mc;
    a.mac_control = ParseMacControl(b, &mc);
    if (a.mac_control && obey_pause_ && port < num_ports_) {
      for (int i = 0; i < 8; ++i) {
        if (!(mc.enable_vector & (1u << i))) continue;
        const uint16_t q = mc.pause ? mc.quanta[0] : mc.quanta[i];
        paused_until_[port][i] = now + PauseQuantaToNs(q, port_rate_bps_);
      }
    }
    const L2Info l2 = ParseL2(b);
    if (l2.ipv4 && b.size() >= l2.l3_offset + 40 && b[l2.l3_offset + 9] == 17 &&
        Load16(&b[l2.l3_offset + 22]) == kTestUdpPort) {
      const uint8_t* body = &b[l2.l3_offset + 28];
      a.test_frame = true;
      a.flow = Load32(body);
      a.seq = Load64(body + 4);
      a.ecn = b[l2.l3_offset + 1] & 3;
      flow_bytes_[a.flow] += f.len;
    }
    arrivals_.push_back(a);
    if (keep_frames_) frames_.emplace_back(b.begin(), b.end());
  }
}

size_t TestHost::Transmit(uint16_t port, std::span<nic::TxFrame> frames,
                          nic::TimeNs now) {
  size_t n = 0;
  for (auto it = raw_.begin(); it != raw_.end() && n < frames.size();) {
    if (it->at > now) break;
    if (it->port != port || it->bytes.size() > frames[n].capacity) {
      ++it;
      continue;
    }
    std::memcpy(frames[n].data, it->bytes.data(), it->bytes.size());
    frames[n].len = static_cast<uint32_t>(it->bytes.size());
    ++n;
    it = raw_.erase(it);
  }
  // Round robin over the streams that are due on this port.
  for (size_t tried = 0; tried < streams_.size() && n < frames.size();) {
    Stream& s = streams_[rr_ % streams_.size()];
    if (s.spec.port == port && s.sent < s.spec.count && s.next <= now &&
        !Paused(s.spec, now)) {
      const size_t len =
          BuildTestFrame(s.spec, s.sent, {frames[n].data, frames[n].capacity});
      if (len == 0) return n;
      frames[n].len = static_cast<uint32_t>(len);
      frames[n].priority = StreamPriority(s.spec);
      ++n;
      ++s.sent;
      s.next = s.spec.interval_ns ? s.next + s.spec.interval_ns : now;
      tried = 0;
    } else {
      ++tried;
    }
    ++rr_;
  }
  return n;
}

bool TestHost::Paused(const StreamSpec& spec, nic::TimeNs now) const {
  return obey_pause_ && spec.port < num_ports_ &&
         paused_until_[spec.port][StreamPriority(spec)] > now;
}

nic::TimeNs TestHost::NextEventTime() const {
  nic::TimeNs t = nic::kNever;
  if (!raw_.empty()) t = raw_.front().at;
  for (const Stream& s : streams_) {
    if (s.sent >= s.spec.count) continue;
    nic::TimeNs when = s.next;
    if (obey_pause_ && s.spec.port < num_ports_) {
      when = std::max(when, paused_until_[s.spec.port][StreamPriority(s.spec)]);
    }
    t = std::min(t, when);
  }
  return t;
}

}  // namespace rocemu::simnet
