// Two RNICs with connected RC, UC and UD queue pairs, driven by any
// sequence of the things applications and a hostile or broken wire can do:
// posts of every opcode with valid, foreign or garbage keys, bounds and
// lengths (inline included), receives, bursts delivered as sent or with
// frames dropped, duplicated, corrupted or reordered, crafted frames with
// a valid ICRC (so they reach the engines, not only the parser) aimed at
// the QPs with fuzz-chosen opcode, PSN, keys, addresses and lengths, and
// time passing (ACK timeouts, RNR waits). Each input starts from fresh
// devices, so it is replayable alone.
//
// Invariant ("never a crash or a lost completion"): after the input, every
// QP is moved to ERR; then every work request a post accepted has exactly
// one completion, send and receive alike, and no completion names a
// request that was never posted. And the rights hold: each side's region
// registered for local read only is never written (posts target it as a
// receive or READ destination, crafted frames name its key).
//
// Input: a sequence of ops, each [op u8] followed by the bytes it reads
// (missing bytes read as zero).
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <span>
#include <vector>

#include "nic/gid_table.h"
#include "nic/rnic.h"
#include "protocol/frame.h"
#include "protocol/opcode.h"
#include "tests/engine/back_to_back.h"

namespace {

using namespace rocemu::nic;           // NOLINT
using namespace rocemu::nic::testing;  // NOLINT
namespace protocol = rocemu::protocol;

class Input {
 public:
  Input(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  uint8_t U8() { return i_ < n_ ? d_[i_++] : 0; }
  uint16_t U16() { return static_cast<uint16_t>(U8() | (U8() << 8)); }
  uint32_t U32() { return U16() | (static_cast<uint32_t>(U16()) << 16); }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t i_ = 0;
};

constexpr int kTypes = 3;  // RC, UC, UD
constexpr QpType kType[kTypes] = {QpType::kRc, QpType::kUc, QpType::kUd};

struct Side {
  Endpoint ep[kTypes];
  uint32_t ro_key = 0;  // a second region: local read only
  AhHandle ah = 0;      // UD: to the peer
  std::vector<uint8_t> ro_buf;
};

struct World {
  ManualClock clock;
  Rnic a{MakeConfig(1)};
  Rnic b{MakeConfig(2)};
  Side sa, sb;
  // wr_id -> completions seen, per (side, type, send?) - wr_ids are unique
  // across the whole input, so one map per side.
  std::map<uint64_t, int> posted[2];
  std::map<uint64_t, int> seen[2];
  uint64_t next_wr = 1;
  std::vector<std::vector<uint8_t>> held;  // frames kept for reordering
};

bool Setup(World& w) {
  for (int side = 0; side < 2; ++side) {
    Rnic& nic = side == 0 ? w.a : w.b;
    Side& s = side == 0 ? w.sa : w.sb;
    for (int t = 0; t < kTypes; ++t) {
      ConnectOptions o;
      o.type = kType[t];
      o.timeout = 8;    // 1 ms: retries happen within an input
      o.rnr_retry = 2;  // finite: an RC send to no receive ends
      o.retry_cnt = 2;
      o.max_send_wr = 16;
      o.max_recv_wr = 16;
      o.buf_size = 1 << 14;
      if (!SetupEndpoint(nic, o, &s.ep[t]).ok()) return false;
    }
    s.ro_buf.assign(4096, 0x5A);
    auto k = nic.RegMr(s.ep[0].pd, s.ro_buf.data(), s.ro_buf.size(), 0);
    if (!k.ok()) return false;
    s.ro_key = *k;
  }
  for (int t = 0; t < kTypes; ++t) {
    ConnectOptions o;
    o.type = kType[t];
    o.timeout = 8;
    o.rnr_retry = 2;
    o.retry_cnt = 2;
    if (!ConnectQp(w.a, w.sa.ep[t], w.b.config(), w.sb.ep[t].qpn, 100, 5000, o)
             .ok() ||
        !ConnectQp(w.b, w.sb.ep[t], w.a.config(), w.sa.ep[t].qpn, 5000, 100, o)
             .ok()) {
      return false;
    }
  }
  AhAttr attr;
  attr.dgid = w.b.config().gid;
  auto ah = w.a.CreateAh(w.sa.ep[2].pd, attr, w.b.config().mac);
  if (!ah.ok()) return false;
  w.sa.ah = *ah;
  attr.dgid = w.a.config().gid;
  ah = w.b.CreateAh(w.sb.ep[2].pd, attr, w.a.config().mac);
  if (!ah.ok()) return false;
  w.sb.ah = *ah;
  return true;
}

void PollAll(World& w) {
  WorkCompletion wc[32];
  for (int side = 0; side < 2; ++side) {
    Rnic& nic = side == 0 ? w.a : w.b;
    Side& s = side == 0 ? w.sa : w.sb;
    for (int t = 0; t < kTypes; ++t) {
      size_t n;
      while ((n = nic.PollCq(s.ep[t].cq, wc)) > 0) {
        for (size_t i = 0; i < n; ++i) ++w.seen[side][wc[i].wr_id];
      }
    }
  }
}

// An SGE into the side's region, its read-only region, or nowhere.
Sge PickSge(Input& in, const Side& s, int t) {
  const uint8_t k = in.U8();
  const uint32_t off = in.U16() % (1 << 14);
  const uint32_t len = in.U16() % 9000;
  const Endpoint& e = s.ep[t];
  switch (k % 4) {
    case 0:
    case 1:
      return Sge{reinterpret_cast<uint64_t>(e.buf.data()) + off, len, e.key};
    case 2:
      return Sge{reinterpret_cast<uint64_t>(s.ro_buf.data()) + off % 4096, len,
                 s.ro_key};
    default:
      return Sge{in.U32(), len, in.U32()};
  }
}

void PostSend(World& w, Input& in, int side) {
  Rnic& nic = side == 0 ? w.a : w.b;
  Side& s = side == 0 ? w.sa : w.sb;
  Side& peer = side == 0 ? w.sb : w.sa;
  const int t = in.U8() % kTypes;
  SendWr wr;
  wr.wr_id = w.next_wr++;
  wr.opcode = static_cast<WrOpcode>(in.U8() % 10);
  const uint8_t f = in.U8();
  wr.send_flags = send_flags::kSignaled | (f & 1 ? send_flags::kInline : 0) |
                  (f & 2 ? send_flags::kSolicited : 0) |
                  (f & 4 ? send_flags::kFence : 0);
  wr.imm_data = in.U32();
  const int nsge = in.U8() % 3;
  for (int i = 0; i < nsge; ++i) wr.sg_list.PushBack(PickSge(in, s, t));
  if (wr.is_inline()) {
    const uint32_t n = in.U16() % 300;
    std::vector<uint8_t> bytes(n, static_cast<uint8_t>(wr.wr_id));
    wr.inline_data.Assign(bytes);
  }
  const uint32_t roff = in.U16() % (1 << 14);
  const uint8_t rk = in.U8();
  const Endpoint& pe = peer.ep[t];
  wr.rdma.remote_addr =
      rk & 1 ? in.U32() : reinterpret_cast<uint64_t>(pe.buf.data()) + roff;
  wr.rdma.rkey = rk & 2 ? in.U32() : pe.key;
  wr.atomic.remote_addr =
      wr.rdma.remote_addr & ~static_cast<uint64_t>(rk & 4 ? 0 : 7);
  wr.atomic.rkey = wr.rdma.rkey;
  wr.atomic.compare_add = in.U32();
  wr.atomic.swap = in.U32();
  wr.invalidate_rkey = rk & 8 ? in.U32() : pe.key;
  wr.bind.mw_rkey = in.U32();
  wr.ud = {s.ah, pe.qpn, rk & 16 ? in.U32() : 0x11111111u};
  if (nic.PostSend(s.ep[t].qpn, wr).ok()) ++w.posted[side][wr.wr_id];
}

void PostRecv(World& w, Input& in, int side) {
  Rnic& nic = side == 0 ? w.a : w.b;
  Side& s = side == 0 ? w.sa : w.sb;
  const int t = in.U8() % kTypes;
  RecvWr wr;
  wr.wr_id = w.next_wr++;
  const int nsge = in.U8() % 3;
  for (int i = 0; i < nsge; ++i) wr.sg_list.PushBack(PickSge(in, s, t));
  if (nic.PostRecv(s.ep[t].qpn, wr).ok()) ++w.posted[side][wr.wr_id];
}

// One burst from `from` to the other side, with a fault chosen by `mode`.
void Deliver(World& w, Input& in, int from) {
  Rnic& src = from == 0 ? w.a : w.b;
  Rnic& dst = from == 0 ? w.b : w.a;
  const uint8_t mode = in.U8();
  const uint8_t which = in.U8();
  std::array<std::vector<uint8_t>, 8> bufs;
  std::array<TxFrame, 8> tx;
  for (size_t i = 0; i < tx.size(); ++i) {
    bufs[i].resize(9216);
    tx[i] = TxFrame{bufs[i].data(), 9216, 0, 0};
  }
  const size_t n = src.Transmit(0, tx, w.clock.Now());
  for (size_t i = 0; i < n; ++i) {
    std::vector<uint8_t> f(tx[i].data, tx[i].data + tx[i].len);
    const bool hit = i == which % (n == 0 ? 1 : n);
    if (hit) {
      switch (mode % 6) {
        case 1:
          continue;  // dropped
        case 2:
          f[which % f.size()] ^= 0x40;  // corrupted (ICRC or a header)
          break;
        case 3: {  // duplicated
          RxFrame d{f.data(), static_cast<uint32_t>(f.size())};
          dst.Receive(0, {&d, 1}, w.clock.Now());
          break;
        }
        case 4:  // held back, delivered after a later burst
          if (w.held.size() < 16) {
            w.held.push_back(std::move(f));
            continue;
          }
          break;
        default:
          break;
      }
    }
    RxFrame r{f.data(), static_cast<uint32_t>(f.size())};
    dst.Receive(0, {&r, 1}, w.clock.Now());
  }
  if (mode % 6 == 5) {
    for (auto& f : w.held) {
      RxFrame r{f.data(), static_cast<uint32_t>(f.size())};
      dst.Receive(0, {&r, 1}, w.clock.Now());
    }
    w.held.clear();
  }
}

// A frame built with a valid ICRC aimed at one of the side's QPs, every
// transport field from the input.
void Inject(World& w, Input& in, int to) {
  Rnic& dst = to == 0 ? w.a : w.b;
  Rnic& src = to == 0 ? w.b : w.a;
  Side& s = to == 0 ? w.sa : w.sb;
  const int t = in.U8() % kTypes;
  protocol::FrameSpec spec;
  spec.net.src_mac = src.config().mac;
  spec.net.dst_mac = dst.config().mac;
  spec.net.src_ip = src.config().gid;
  spec.net.dst_ip = dst.config().gid;
  spec.net.udp_src_port = 0xC001;
  auto& h = spec.hdr;
  h.bth.opcode = in.U8();
  h.bth.dest_qp = in.U8() & 1 ? in.U32() & 0xFFFFFF : s.ep[t].qpn;
  h.bth.psn = in.U32() & 0xFFFFFF;
  h.bth.pkey = in.U8() & 1 ? in.U16() : 0xFFFF;
  h.bth.se = in.U8() & 1;
  h.bth.ack_req = in.U8() & 1;
  const uint8_t rk = in.U8();
  h.reth.va = rk & 1 ? in.U32()
                     : reinterpret_cast<uint64_t>(s.ep[t].buf.data()) +
                           in.U16() % (1 << 14);
  h.reth.rkey = rk & 2 ? in.U32() : s.ep[t].key;
  h.reth.dma_len = in.U16();
  h.atomic.va = h.reth.va;
  h.atomic.rkey = h.reth.rkey;
  h.atomic.swap_add = in.U32();
  h.atomic.compare = in.U32();
  h.aeth.syndrome = in.U8();
  h.aeth.msn = in.U32() & 0xFFFFFF;
  h.deth.qkey = rk & 4 ? in.U32() : 0x11111111u;
  h.deth.src_qp = in.U32() & 0xFFFFFF;
  h.imm = in.U32();
  h.ieth_rkey = rk & 8 ? in.U32() : s.ep[t].key;
  const uint32_t len = in.U16() % 4200;
  std::vector<uint8_t> payload(len, 0xC3);
  std::vector<uint8_t> frame(9216);
  const size_t n = protocol::BuildRoceFrame(spec, payload, frame);
  if (n == 0) return;  // undefined opcode or too long: nothing to send
  RxFrame r{frame.data(), static_cast<uint32_t>(n)};
  dst.Receive(0, {&r, 1}, w.clock.Now());
}

// ibv_modify_qp(IBV_QPS_ERR), which an application may do at any time.
void EndQp(World& w, int side, int t) {
  QpAttr a;
  a.qp_state = QpState::kErr;
  (void)(side == 0 ? w.a : w.b)
      .ModifyQp((side == 0 ? w.sa : w.sb).ep[t].qpn, a, qp_attr::kState);
}

void Check(World& w) {
  for (int side = 0; side < 2; ++side) {
    // Registered with no access right beyond local read: no receive, READ
    // response, atomic or remote write (crafted or not) may change a byte.
    const Side& s = side == 0 ? w.sa : w.sb;
    for (size_t i = 0; i < s.ro_buf.size(); ++i) {
      if (s.ro_buf[i] != 0x5A) {
        std::fprintf(stderr,
                     "side %d: byte %zu of the read-only region is 0x%02x\n",
                     side, i, s.ro_buf[i]);
        std::abort();
      }
    }
    for (const auto& [id, n] : w.seen[side]) {
      if (w.posted[side].find(id) == w.posted[side].end()) {
        std::fprintf(stderr,
                     "side %d: completion for wr_id %llu never posted\n", side,
                     static_cast<unsigned long long>(id));
        std::abort();
      }
    }
    for (const auto& [id, n] : w.posted[side]) {
      auto it = w.seen[side].find(id);
      const int got = it == w.seen[side].end() ? 0 : it->second;
      if (got != n) {
        std::fprintf(stderr,
                     "side %d: wr_id %llu posted %d, completed %d times\n",
                     side, static_cast<unsigned long long>(id), n, got);
        std::abort();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World w;
  if (!Setup(w)) {
    std::fprintf(stderr, "setup failed\n");
    std::abort();
  }
  Input in(data, size);
  for (int ops = 0; !in.empty() && ops < 400; ++ops) {
    switch (in.U8() % 10) {
      case 0:
      case 1:
        PostSend(w, in, 0);
        break;
      case 2:
        PostSend(w, in, 1);
        break;
      case 3:
        PostRecv(w, in, 1);
        break;
      case 4:
        PostRecv(w, in, 0);
        break;
      case 5:
        Deliver(w, in, 0);
        break;
      case 6:
        Deliver(w, in, 1);
        break;
      case 7:
        Inject(w, in, in.U8() & 1);
        break;
      case 8:
        w.clock.Advance(static_cast<TimeNs>(in.U8()) * 50'000);
        break;
      case 9: {
        const int side = in.U8() & 1;
        EndQp(w, side, in.U8() % kTypes);
        break;
      }
    }
    PollAll(w);
  }
  // Let what is in flight settle a little, then end every QP: a flush
  // completes whatever is still outstanding.
  Input none(nullptr, 0);
  for (int i = 0; i < 8; ++i) {
    Deliver(w, none, 0);
    Deliver(w, none, 1);
    w.clock.Advance(500'000);
    PollAll(w);
  }
  for (int side = 0; side < 2; ++side) {
    for (int t = 0; t < kTypes; ++t) EndQp(w, side, t);
  }
  PollAll(w);
  Check(w);
  return 0;
}
