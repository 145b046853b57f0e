// The RNIC's congestion integration, two devices wired in-process under a
// manual clock: ECN/DSCP/priority of RoCE frames, the NP's CNPs (paced per
// QP), CNPs feeding the DCQCN RP and pacer, PFC pause by time, counters.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

#include "nic/rnic.h"
#include "protocol/frame.h"
#include "protocol/pfc.h"
#include "tests/engine/back_to_back.h"
#include "tests/simnet/ether.h"

namespace rocemu::nic::testing {
namespace {

using protocol::ParsedFrame;

struct Sent {
  int dir;
  TimeNs t;
  std::vector<uint8_t> bytes;
  ParsedFrame p;
  uint8_t priority;
};

// Like BackToBack, but every frame may be rewritten (CE-marked) in flight and
// each side's config is the test's.
class Wire {
 public:
  Wire(const RnicConfig& a, const RnicConfig& b) : a_(a), b_(b) {}
  Rnic& a() { return a_; }
  Rnic& b() { return b_; }
  ManualClock clock;
  std::function<void(Sent&)> mutate;  // called before delivery
  std::vector<Sent> log;
  // Link: one frame per `gap` ns per direction.
  TimeNs gap = 1000;

  void RunUntil(TimeNs deadline) {
    for (int step = 0; step < 1000000; ++step) {
      const size_t moved = Move(0) + Move(1);
      TimeNs t = std::min(a_.NextEventTime(), b_.NextEventTime());
      if (moved != 0) t = std::min(t, clock.Now() + gap);
      if (t == kNever || t > deadline) {
        clock.Set(deadline);
        return;
      }
      clock.Set(std::max(t, clock.Now() + (moved ? gap : 1)));
    }
    ADD_FAILURE() << "wire did not settle";
  }

  std::vector<const Sent*> Frames(int dir, int opcode) const {
    std::vector<const Sent*> out;
    for (const Sent& s : log) {
      if (s.dir == dir && s.p.kind == protocol::FrameKind::kRoce &&
          s.p.hdr.bth.opcode == opcode) {
        out.push_back(&s);
      }
    }
    return out;
  }

 private:
  size_t Move(int dir) {
    Rnic& from = dir == 0 ? a_ : b_;
    Rnic& to = dir == 0 ? b_ : a_;
    std::vector<uint8_t> buf(9216);
    TxFrame tx{buf.data(), static_cast<uint32_t>(buf.size()), 0, 0};
    if (from.Transmit(0, {&tx, 1}, clock.Now()) == 0) return 0;
    Sent s{
        dir, clock.Now(), {buf.data(), buf.data() + tx.len}, {}, tx.priority};
    if (mutate) mutate(s);
    EXPECT_EQ(protocol::ParseFrame(s.bytes, &s.p), protocol::ParseError::kOk);
    log.push_back(std::move(s));
    const Sent& l = log.back();
    RxFrame rx{l.bytes.data(), static_cast<uint32_t>(l.bytes.size())};
    to.Receive(0, {&rx, 1}, clock.Now());
    return 1;
  }

  Rnic a_;
  Rnic b_;
};

RnicConfig Config(uint8_t id, uint32_t np_gap_us = 0) {
  RnicConfig c = MakeConfig(id);
  c.congestion.dcqcn = pfc_ecn::DcqcnParams::Nvidia(10000);
  c.congestion.dcqcn.np.np_min_time_between_cnps = np_gap_us;
  c.congestion.pfc_rx.port_rate_bps = 10'000'000'000;
  return c;
}

struct Conn {
  Endpoint ea, eb;
};

// RESET -> INIT -> RTR -> RTS with the given address-vector traffic class
// (0: the port's default DSCP).
void ConnectTc(Rnic& nic, const Endpoint& self, const RnicConfig& peer,
               uint32_t peer_qpn, uint8_t traffic_class) {
  using namespace qp_attr;  // NOLINT
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.port_num = 1;
  a.qp_access_flags = access::kRemoteWrite;
  ASSERT_TRUE(
      nic.ModifyQp(self.qpn, a, kState | kPkeyIndex | kPort | kAccessFlags)
          .ok());
  a.qp_state = QpState::kRtr;
  a.path_mtu = PathMtu::kMtu1024;
  a.dest_qp_num = peer_qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.dgid = peer.gid;
  a.ah_attr.dmac = peer.mac;
  a.ah_attr.traffic_class = traffic_class;
  ASSERT_TRUE(nic.ModifyQp(self.qpn, a,
                           kState | kAv | kPathMtu | kDestQpn | kRqPsn |
                               kMaxDestRdAtomic | kMinRnrTimer)
                  .ok());
  a.qp_state = QpState::kRts;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  ASSERT_TRUE(nic.ModifyQp(self.qpn, a,
                           kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry |
                               kMaxQpRdAtomic)
                  .ok());
}

Conn Connected(Wire& w, uint8_t traffic_class = 0) {
  ConnectOptions o;
  o.buf_size = 1 << 20;
  o.max_send_wr = 256;
  Conn c;
  EXPECT_TRUE(SetupEndpoint(w.a(), o, &c.ea).ok());
  EXPECT_TRUE(SetupEndpoint(w.b(), o, &c.eb).ok());
  ConnectTc(w.a(), c.ea, w.b().config(), c.eb.qpn, traffic_class);
  ConnectTc(w.b(), c.eb, w.a().config(), c.ea.qpn, traffic_class);
  return c;
}

void Write(Wire& w, const Conn& c, uint32_t len, uint64_t id = 1) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(c.ea, 0, len)};
  wr.rdma.remote_addr = Va(c.eb, 0);
  wr.rdma.rkey = c.eb.key;
  ASSERT_TRUE(w.a().PostSend(c.ea.qpn, wr).ok());
}

TEST(CongestionIntegration, RoceFramesAreEct0OnDscp26Priority3ByDefault) {
  Wire w(Config(1), Config(2));
  Conn c = Connected(w, 0);
  Write(w, c, 1000);
  w.RunUntil(1'000'000);
  auto req = w.Frames(0, protocol::Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->p.net.ecn, 0b10);
  EXPECT_EQ(req[0]->p.net.dscp, 26);
  EXPECT_EQ(req[0]->priority, 3);
  // An explicit traffic class wins.
  Wire w2(Config(1), Config(2));
  Conn c2 = Connected(w2, 10 << 2);
  Write(w2, c2, 100);
  w2.RunUntil(1'000'000);
  auto req2 = w2.Frames(0, protocol::Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(req2.size(), 1u);
  EXPECT_EQ(req2[0]->p.net.dscp, 10);
}

TEST(CongestionIntegration, EcnCanBeTurnedOff) {
  RnicConfig a = Config(1);
  a.congestion.ecn_capable = false;
  Wire w(a, Config(2));
  Conn c = Connected(w);
  Write(w, c, 100);
  w.RunUntil(1'000'000);
  auto req = w.Frames(0, protocol::Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->p.net.ecn, 0b00);
}

TEST(CongestionIntegration, CeMarkMakesCnpToSenderQpAndRpCutsRate) {
  Wire w(Config(1, 0), Config(2, 0));
  Conn c = Connected(w);
  w.mutate = [](Sent& s) {
    if (s.dir == 0) simnet::MarkCe(s.bytes);
  };
  Write(w, c, 8 * 1024);  // 8 packets of 1024 B
  w.RunUntil(2'000'000);
  auto data = w.Frames(0, protocol::Opcode::kRcRdmaWriteFirst);
  ASSERT_EQ(data.size(), 1u);
  auto cnps = w.Frames(1, protocol::Opcode::kCnp);
  // N = 0: one CNP per marked packet.
  ASSERT_EQ(cnps.size(), 8u);
  const Sent& cnp = *cnps[0];
  EXPECT_EQ(cnp.p.hdr.bth.dest_qp, c.ea.qpn);
  EXPECT_EQ(cnp.p.hdr.bth.pkey, 0xFFFF);
  EXPECT_TRUE(cnp.p.hdr.bth.becn);
  EXPECT_EQ(cnp.p.net.dscp, 48);
  EXPECT_EQ(cnp.p.net.ecn, 0b00);
  EXPECT_EQ(cnp.priority, 6);
  EXPECT_EQ(cnp.p.net.dst_mac, w.a().config().mac);
  EXPECT_EQ(w.b().QueryCounters().np_ecn_marked_roce_packets, 8u);
  EXPECT_EQ(w.b().QueryCounters().np_cnp_sent, 8u);
  EXPECT_EQ(w.a().QueryCounters().rp_cnp_handled, 8u);
  EXPECT_EQ(w.a().QueryCounters().rp_cnp_ignored, 0u);
  const Qp* qp = w.a().GetQp(c.ea.qpn);
  EXPECT_TRUE(qp->cc_.rp.active());
  // Data still arrived intact.
  EXPECT_EQ(0, std::memcmp(c.ea.buf.data(), c.eb.buf.data(), 8 * 1024));
}

TEST(CongestionIntegration, NpPacingGivesOneCnpPerWindowPerQp) {
  // The sender ignores CNPs so that the link alone spaces its packets.
  RnicConfig a = Config(1, 50);
  a.congestion.dcqcn.enabled = false;
  Wire w(a, Config(2, 50));
  Conn c = Connected(w);
  w.mutate = [](Sent& s) {
    if (s.dir == 0) simnet::MarkCe(s.bytes);
  };
  // 40 packets 1 us apart: all inside one 50 us window.
  Write(w, c, 40 * 1024);
  w.RunUntil(2'000'000);
  EXPECT_EQ(w.Frames(1, protocol::Opcode::kCnp).size(), 1u);
  EXPECT_EQ(w.b().QueryCounters().np_ecn_marked_roce_packets, 40u);
  // After the window a new mark answers at once.
  w.clock.Advance(100'000);
  Write(w, c, 1024, 2);
  w.RunUntil(w.clock.Now() + 1'000'000);
  EXPECT_EQ(w.Frames(1, protocol::Opcode::kCnp).size(), 2u);
}

TEST(CongestionIntegration, PacerSpacesRequestsAfterACut) {
  Wire w(Config(1, 0), Config(2, 0));
  Conn c = Connected(w);
  w.gap = 100;  // a fast wire: pacing, not the link, spaces frames
  int marked = 0;
  w.mutate = [&](Sent& s) {
    if (s.dir == 0 && marked < 1) {
      simnet::MarkCe(s.bytes);
      ++marked;
    }
  };
  Write(w, c, 64 * 1024);
  w.RunUntil(5'000'000);
  auto mid = w.Frames(0, protocol::Opcode::kRcRdmaWriteMiddle);
  ASSERT_GT(mid.size(), 20u);
  const Qp* qp = w.a().GetQp(c.ea.qpn);
  const double rate = qp->cc_.rp.current_rate_mbps();
  ASSERT_LT(rate, 10000.0);
  // The last frames are spaced by at least frame bits / rate.
  const Sent& x = *mid[mid.size() - 2];
  const Sent& y = *mid[mid.size() - 1];
  const double min_gap_ns = x.bytes.size() * 8 * 1000.0 / rate;
  EXPECT_GE(static_cast<double>(y.t - x.t), min_gap_ns * 0.99);
  EXPECT_EQ(0, std::memcmp(c.ea.buf.data(), c.eb.buf.data(), 64 * 1024));
}

TEST(CongestionIntegration, CnpIgnoredWhenDcqcnDisabled) {
  RnicConfig a = Config(1, 0);
  a.congestion.dcqcn.enabled = false;
  Wire w(a, Config(2, 0));
  Conn c = Connected(w);
  w.mutate = [](Sent& s) {
    if (s.dir == 0) simnet::MarkCe(s.bytes);
  };
  Write(w, c, 2048);
  w.RunUntil(1'000'000);
  EXPECT_EQ(w.a().QueryCounters().rp_cnp_ignored, 2u);
  EXPECT_EQ(w.a().QueryCounters().rp_cnp_handled, 0u);
  EXPECT_EQ(w.a().GetQp(c.ea.qpn)->pace_until_, 0u);
}

TEST(CongestionIntegration, PfcPausesThePriorityForItsQuantaThenResumes) {
  Wire w(Config(1), Config(2));
  Conn c = Connected(w);
  // 1000 quanta at 10 Gb/s: 51.2 us on priority 3.
  std::vector<uint8_t> pfc(64);
  protocol::PfcInfo info;
  info.enable_vector = 1u << 3;
  info.quanta[3] = 1000;
  pfc.resize(protocol::BuildPfcFrame(w.b().config().mac, info, pfc));
  RxFrame f{pfc.data(), static_cast<uint32_t>(pfc.size())};
  w.clock.Set(10'000);
  w.a().Receive(0, {&f, 1}, w.clock.Now());
  Write(w, c, 1024);
  w.RunUntil(1'000'000);
  auto req = w.Frames(0, protocol::Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->t, 10'000u + 51'200u);
  const pfc_ecn::PortCongestionCounters pc =
      w.a().congestion().PortCounters(w.clock.Now());
  EXPECT_EQ(pc.rx_prio_pause[3], 1u);
  EXPECT_EQ(pc.rx_prio_pause_duration[3], 51u);  // us
  EXPECT_EQ(pc.rx_prio_pause[0], 0u);
}

TEST(CongestionIntegration, PfcOnOtherPriorityDoesNotStopRoce) {
  Wire w(Config(1), Config(2));
  Conn c = Connected(w);
  std::vector<uint8_t> pfc(64);
  protocol::PfcInfo info;
  info.enable_vector = 1u << 5;
  info.quanta[5] = 0xFFFF;
  pfc.resize(protocol::BuildPfcFrame(w.b().config().mac, info, pfc));
  RxFrame f{pfc.data(), static_cast<uint32_t>(pfc.size())};
  w.a().Receive(0, {&f, 1}, 0);
  Write(w, c, 1024);
  w.RunUntil(1'000'000);
  auto req = w.Frames(0, protocol::Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->t, 0u);
}

TEST(CongestionIntegration, XonResumesAtOnce) {
  Wire w(Config(1), Config(2));
  Conn c = Connected(w);
  std::vector<uint8_t> buf(64);
  protocol::PfcInfo info;
  info.enable_vector = 1u << 3;
  info.quanta[3] = 0xFFFF;
  const size_t len = protocol::BuildPfcFrame(w.b().config().mac, info, buf);
  RxFrame f{buf.data(), static_cast<uint32_t>(len)};
  w.a().Receive(0, {&f, 1}, 0);
  Write(w, c, 1024);
  w.RunUntil(20'000);
  EXPECT_TRUE(w.Frames(0, protocol::Opcode::kRcRdmaWriteOnly).empty());
  info.quanta[3] = 0;  // XON
  const size_t len2 = protocol::BuildPfcFrame(w.b().config().mac, info, buf);
  RxFrame x{buf.data(), static_cast<uint32_t>(len2)};
  w.a().Receive(0, {&x, 1}, 20'000);
  w.RunUntil(1'000'000);
  auto req = w.Frames(0, protocol::Opcode::kRcRdmaWriteOnly);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->t, 20'000u);
}

}  // namespace
}  // namespace rocemu::nic::testing
