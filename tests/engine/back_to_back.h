// Two RNIC devices wired back to back in-process: Transmit output of one is
// handed to Receive of the other, under a manual clock. Every frame is
// parsed and logged so tests can check the wire (opcodes, PSNs, AETH), and a
// filter can drop or replace chosen frames by their index on each direction.
#ifndef ROCEMU_TESTS_ENGINE_BACK_TO_BACK_H_
#define ROCEMU_TESTS_ENGINE_BACK_TO_BACK_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nic/clock.h"
#include "nic/rnic.h"
#include "protocol/frame.h"

namespace rocemu::nic::testing {

struct WireFrame {
  int dir = 0;       // 0: A -> B, 1: B -> A
  size_t index = 0;  // per-direction index
  std::vector<uint8_t> bytes;
  protocol::ParsedFrame parsed;  // payload points into `bytes`
  bool dropped = false;
  uint64_t tx_id = 0;  // the sender's packet id (TxFrame::packet_id)
  uint64_t rx_id = 0;  // the receiver's (given by this carrier), 0: dropped
};

inline RnicConfig MakeConfig(uint8_t id) {
  RnicConfig c;
  c.mac = {0x02, 0, 0, 0, 0, id};
  c.gid = GidFromIpv4(10, 0, 0, id);
  c.port.active_mtu = Mtu::k4096;
  return c;
}

class BackToBack {
 public:
  BackToBack() : a_(MakeConfig(1)), b_(MakeConfig(2)) {}
  BackToBack(const RnicConfig& a, const RnicConfig& b) : a_(a), b_(b) {}

  Rnic& a() { return a_; }
  Rnic& b() { return b_; }
  ManualClock& clock() { return clock_; }
  std::vector<std::unique_ptr<WireFrame>>& log() { return log_; }

  // Return true to drop the frame.
  std::function<bool(const WireFrame&)> drop;
  // Called before delivery: may change the frame's bytes (what the
  // receiver gets; the log keeps what was sent).
  std::function<void(const WireFrame&, std::vector<uint8_t>&)> rewrite;

  // Moves frames until both sides are idle; advances the clock to the next
  // timer when nothing moves. Stops after max_steps to bound runaway tests.
  void Run(int max_steps = 100000) { RunUntil(kNever, max_steps); }

  // Same, but stops rather than advance the clock past `deadline`.
  void RunUntil(TimeNs deadline, int max_steps = 100000) {
    for (int step = 0; step < max_steps; ++step) {
      const size_t moved = Move(0) + Move(1);
      if (moved != 0) continue;
      const TimeNs t = std::min(a_.NextEventTime(), b_.NextEventTime());
      if (t == kNever || (deadline != kNever && t > deadline)) return;
      if (t <= clock_.Now()) {
        // Something claims to be ready yet sent nothing: give it one more
        // chance after a tick, then stop.
        clock_.Advance(1);
        if (Move(0) + Move(1) == 0) return;
        continue;
      }
      clock_.Set(t);
    }
    ADD_FAILURE() << "back-to-back loop did not settle";
  }

  // Delivers a hand-made frame to side `to` (0: A, 1: B), as a carrier
  // that verified its IPv4 header checksum or not.
  // Returns the frame's packet id at the receiver.
  uint64_t Inject(int to, std::span<const uint8_t> bytes,
                  bool ip_checksum_good = false) {
    Rnic& nic = to == 0 ? a_ : b_;
    RxFrame f{bytes.data(), static_cast<uint32_t>(bytes.size()),
              ip_checksum_good, nic.verdicts().NextId()};
    nic.Receive(0, {&f, 1}, clock_.Now());
    return f.packet_id;
  }

  // Frames of one direction with a given opcode.
  std::vector<const WireFrame*> Frames(int dir, int opcode = -1) const {
    std::vector<const WireFrame*> out;
    for (const auto& f : log_) {
      if (f->dir == dir && (opcode < 0 || f->parsed.hdr.bth.opcode == opcode)) {
        out.push_back(f.get());
      }
    }
    return out;
  }

 private:
  size_t Move(int dir) {
    Rnic& from = dir == 0 ? a_ : b_;
    Rnic& to = dir == 0 ? b_ : a_;
    constexpr size_t kBurst = 8;
    std::vector<std::vector<uint8_t>> bufs(kBurst, std::vector<uint8_t>(9216));
    TxFrame tx[kBurst];
    for (size_t i = 0; i < kBurst; ++i) {
      tx[i].data = bufs[i].data();
      tx[i].capacity = static_cast<uint32_t>(bufs[i].size());
    }
    const size_t n = from.Transmit(0, {tx, kBurst}, clock_.Now());
    for (size_t i = 0; i < n; ++i) {
      auto w = std::make_unique<WireFrame>();
      w->dir = dir;
      w->index = next_index_[dir]++;
      w->bytes.assign(tx[i].data, tx[i].data + tx[i].len);
      EXPECT_EQ(protocol::ParseFrame(w->bytes, &w->parsed),
                protocol::ParseError::kOk);
      w->tx_id = tx[i].packet_id;
      w->dropped = drop && drop(*w);
      if (!w->dropped) {
        std::vector<uint8_t> bytes = w->bytes;
        if (rewrite) rewrite(*w, bytes);
        w->rx_id = to.verdicts().NextId();
        RxFrame rx{bytes.data(), static_cast<uint32_t>(bytes.size()), false,
                   w->rx_id};
        to.Receive(0, {&rx, 1}, clock_.Now());
      }
      log_.push_back(std::move(w));
    }
    return n;
  }

  ManualClock clock_;
  Rnic a_;
  Rnic b_;
  size_t next_index_[2] = {0, 0};
  std::vector<std::unique_ptr<WireFrame>> log_;
};

// One side's objects for a connected QP.
struct Endpoint {
  PdHandle pd = 0;
  CqHandle cq = 0;
  uint32_t qpn = 0;
  std::vector<uint8_t> buf;
  uint32_t key = 0;
};

struct ConnectOptions {
  QpType type = QpType::kRc;
  PathMtu mtu = PathMtu::kMtu1024;
  uint32_t sq_psn_a = 100;
  uint32_t sq_psn_b = 5000;
  uint8_t timeout = 14;  // 67 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 us
  uint8_t max_rd_atomic = 4;
  uint32_t max_send_wr = 64;
  uint32_t max_recv_wr = 64;
  uint32_t qkey = 0x11111111;
  AccessFlags qp_access =
      access::kRemoteWrite | access::kRemoteRead | access::kRemoteAtomic;
  AccessFlags mr_access = access::kLocalWrite | access::kRemoteWrite |
                          access::kRemoteRead | access::kRemoteAtomic;
  size_t buf_size = 1 << 16;
  uint32_t cq_depth = 1024;  // one CQ per endpoint, for sends and receives
};

inline absl::Status SetupEndpoint(Rnic& nic, const ConnectOptions& o,
                                  Endpoint* e) {
  absl::StatusOr<PdHandle> pd = nic.AllocPd();
  if (!pd.ok()) return pd.status();
  e->pd = *pd;
  absl::StatusOr<CqHandle> cq = nic.CreateCq(o.cq_depth);
  if (!cq.ok()) return cq.status();
  e->cq = *cq;
  QpInitAttr init;
  init.qp_type = o.type;
  init.send_cq = e->cq;
  init.recv_cq = e->cq;
  init.cap = {o.max_send_wr, o.max_recv_wr, 4, 4, 256};
  absl::StatusOr<uint32_t> qpn = nic.CreateQp(e->pd, init);
  if (!qpn.ok()) return qpn.status();
  e->qpn = *qpn;
  e->buf.assign(o.buf_size, 0);
  absl::StatusOr<uint32_t> key =
      nic.RegMr(e->pd, e->buf.data(), e->buf.size(), o.mr_access);
  if (!key.ok()) return key.status();
  e->key = *key;
  return absl::OkStatus();
}

// RESET -> INIT -> RTR -> RTS for `self` towards `peer`.
inline absl::Status ConnectQp(Rnic& nic, const Endpoint& self,
                              const RnicConfig& peer_cfg, uint32_t peer_qpn,
                              uint32_t sq_psn, uint32_t rq_psn,
                              const ConnectOptions& o) {
  using namespace qp_attr;  // NOLINT
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = o.qp_access;
  a.qkey = o.qkey;
  QpAttrMask m = kState | kPkeyIndex | kPort;
  m |= o.type == QpType::kUd ? kQkey : kAccessFlags;
  absl::Status s = nic.ModifyQp(self.qpn, a, m);
  if (!s.ok()) return s;
  a.qp_state = QpState::kRtr;
  a.path_mtu = o.mtu;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = o.max_rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr.dgid = peer_cfg.gid;
  a.ah_attr.dmac = peer_cfg.mac;
  a.ah_attr.traffic_class = 26 << 2;
  if (o.type == QpType::kRc) {
    m = kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic |
        kMinRnrTimer;
  } else if (o.type == QpType::kUc) {
    m = kState | kAv | kPathMtu | kDestQpn | kRqPsn;
  } else {
    m = kState;
  }
  s = nic.ModifyQp(self.qpn, a, m);
  if (!s.ok()) return s;
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  m = kState | kSqPsn;
  if (o.type == QpType::kRc) {
    m |= kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic;
  }
  return nic.ModifyQp(self.qpn, a, m);
}

// A connected pair: ea on A, eb on B.
struct Pair {
  Endpoint ea, eb;
};

inline Pair Connect(BackToBack& net, const ConnectOptions& o = {}) {
  Pair p;
  EXPECT_TRUE(SetupEndpoint(net.a(), o, &p.ea).ok());
  EXPECT_TRUE(SetupEndpoint(net.b(), o, &p.eb).ok());
  EXPECT_TRUE(ConnectQp(net.a(), p.ea, net.b().config(), p.eb.qpn, o.sq_psn_a,
                        o.sq_psn_b, o)
                  .ok());
  EXPECT_TRUE(ConnectQp(net.b(), p.eb, net.a().config(), p.ea.qpn, o.sq_psn_b,
                        o.sq_psn_a, o)
                  .ok());
  return p;
}

inline std::vector<WorkCompletion> Poll(Rnic& nic, CqHandle cq) {
  std::vector<WorkCompletion> out;
  WorkCompletion wc[16];
  size_t n;
  while ((n = nic.PollCq(cq, wc)) > 0) out.insert(out.end(), wc, wc + n);
  return out;
}

inline Sge SgeOf(const Endpoint& e, size_t offset, uint32_t len) {
  return Sge{reinterpret_cast<uint64_t>(e.buf.data() + offset), len, e.key};
}

inline uint64_t Va(const Endpoint& e, size_t offset) {
  return reinterpret_cast<uint64_t>(e.buf.data() + offset);
}

// A signaled WRITE of `len` bytes from A's buffer at `off` to B's at `off`.
inline SendWr WriteWr(const Pair& p, uint64_t id, uint32_t len,
                      size_t off = 0) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, off, len)};
  wr.rdma.remote_addr = Va(p.eb, off);
  wr.rdma.rkey = p.eb.key;
  return wr;
}

// A signaled FETCH_AND_ADD of `add` to B's 8 bytes at `remote_off`, the
// original value returned into A's buffer at `local_off`.
inline SendWr FetchAddWr(const Pair& p, uint64_t id, size_t remote_off,
                         uint64_t add, size_t local_off = 0) {
  SendWr wr;
  wr.wr_id = id;
  wr.opcode = WrOpcode::kAtomicFetchAndAdd;
  wr.send_flags = send_flags::kSignaled;
  wr.sg_list = {SgeOf(p.ea, local_off, 8)};
  wr.atomic.remote_addr = Va(p.eb, remote_off);
  wr.atomic.rkey = p.eb.key;
  wr.atomic.compare_add = add;
  return wr;
}

// A connected pair of UD QPs and, in *ah_to_b, A's address handle for B.
inline Pair ConnectUd(BackToBack& net, AhHandle* ah_to_b) {
  ConnectOptions o;
  o.type = QpType::kUd;
  Pair p = Connect(net, o);
  AhAttr attr;
  attr.dgid = net.b().config().gid;
  absl::StatusOr<AhHandle> ah =
      net.a().CreateAh(p.ea.pd, attr, net.b().config().mac);
  EXPECT_TRUE(ah.ok()) << ah.status();
  *ah_to_b = ah.ok() ? *ah : 0;
  return p;
}

inline void Fill(std::vector<uint8_t>& buf, size_t off, size_t len,
                 uint8_t seed) {
  for (size_t i = 0; i < len; ++i) {
    buf[off + i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
  }
}

}  // namespace rocemu::nic::testing

#endif  // ROCEMU_TESTS_ENGINE_BACK_TO_BACK_H_
