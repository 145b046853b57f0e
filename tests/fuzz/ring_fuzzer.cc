// The verbs session server against a client that writes anything into its
// own shared-memory rings. Each input is one hostile client: it sets up a
// PD, memory regions, two CQs, an SRQ and four QPs (RC pair connected to
// each other over the RNIC's loopback, the second taking receives from the
// SRQ; UD; RC left in RESET), then the input drives its rings: well-formed
// posts, crafted slots (any opcode, SGE count, length, key, address, inline
// length, wr_id), raw bytes over slots, any producer/consumer/arm/doorbell
// index, doorbells naming anything, control requests between them (state
// changes, destroy, dereg, resize), and the daemon's passes with clock
// steps. The server and RNIC live on across inputs, as a daemon does.
//
// Invariants, on every pass:
//  - nothing outside the registered ranges changes: guard bytes around the
//    regions of the client's buffer, a region registered without local
//    write, guard bytes around a process-memory region, and a victim area
//    of the process that is never registered (the server runs in this
//    process: a stray pointer would land there);
//  - no posted slot completes twice, and no completion names a WR that was
//    never posted or a QP that is not the client's: after every pass each
//    slot of every work ring gets a fresh tag in its wr_id, so a tag seen in
//    two completions is a slot served twice (except on a ring whose
//    producer overran the consumer or wrote the consumer's index: the
//    client then serves its own slot twice, see Hostile::HeadMoved);
// and per input: the client is either still served (a request gets its
// reply) or was disconnected (counted); a second, well-behaved client then
// runs an RC SEND/RECV and an RDMA WRITE between its own QPs, byte-exact,
// each completion once; both leave nothing behind.
//
// Input: byte 0 chooses the setup (bit 0: the hostile client rings
// doorbells, bit 1: the good one does, bit 2: a process-memory region),
// then operations [op u8][operands], read until the input ends.
// ROCEMU_FUZZ_STATE=1 prints the server's counters at exit,
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/fuzz/ring_fuzzer_world.h"

namespace rocemu::ring_fuzz {
namespace {

// --- operands ------------------------------------------------------------

uint64_t Address(Hostile& h, Input& in) {
  const uint8_t sel = in.U8();
  const uint32_t off = in.U16();
  switch (sel % 10) {
    case 0:
      return kIovaA + off % kALen;
    case 1:
      return kIovaA + kALen - off % 64;  // straddles the end
    case 2:
      return kIovaA - 1 - off % 64;  // just before the start
    case 3:
      return kIovaR + off % kRLen;
    case 4:
      return reinterpret_cast<uint64_t>(g_proc + kPOff) + off % kPLen;
    case 5:  // anywhere in the client's buffer, as a host address
      return reinterpret_cast<uint64_t>(h.w.buf) + off % kBufLen;
    case 6:
      return reinterpret_cast<uint64_t>(g_victim) + off % sizeof(g_victim);
    case 7:  // the process region's guards
      return reinterpret_cast<uint64_t>(g_proc) + off % kProcLen;
    default:
      return in.U64();
  }
}

uint32_t Key(Hostile& h, Input& in) {
  switch (in.U8() % 9) {
    case 0:
      return h.key_a;
    case 1:
      return h.key_r;
    case 2:
      return h.key_p;
    case 3:
      return 0;
    case 4:
      return h.key_a ^ 1;  // same region index, another key byte
    case 5:
      return h.key_a + 0x100;  // the next index
    case 6:
      return h.mw;
    default:
      return in.U32();
  }
}

uint32_t Length(Input& in) {
  const uint8_t sel = in.U8();
  if (sel < 200) return sel * 37u;
  if (sel < 240) return in.U16();
  return in.U32();  // up to the wrap of addr + length and of the total
}

uint32_t Qpn(Hostile& h, Input& in) {
  const uint8_t sel = in.U8();
  if (sel < 200) return h.qp[sel % 4].qpn;
  return in.U32();
}

WireSge Sge(Hostile& h, Input& in) {
  WireSge s;
  s.addr = Address(h, in);
  s.length = Length(in);
  s.lkey = Key(h, in);
  return s;
}

// wr_id from the input, kept out of the tag space (a tag is a promise that
// its slot was stamped once).
uint64_t WrId(Hostile& h, Input& in, int ring) {
  const uint8_t sel = in.U8();
  if (sel < 128) return h.Tag(ring);
  const uint64_t v = in.U64();
  return (v & kTagMask) == kTagBits ? v ^ (1ull << 63) : v;
}

RawRing* Ring(Hostile& h, uint8_t sel, bool* cq, int* cq_index) {
  *cq = false;
  switch (sel % 12) {
    case 0:
    case 1:
    case 2:
    case 3:
      return &h.qp[sel % 12].sq;
    case 4:
    case 5:
    case 6:
    case 7:
      return &h.qp[sel % 12 - 4].rq;
    case 8:
      return &h.srq.ring;
    case 9:
      return &h.c->doorbells();
    default:
      *cq = true;
      *cq_index = sel % 12 - 10;
      return &h.cq[*cq_index].ring;
  }
}

// Publishes slot `s` (already written at the ring's head) and maybe rings.
void PublishAndRing(Hostile& h, RawRing& r, DoorbellKind kind, uint32_t handle,
                    bool ring) {
  r.Publish();
  h.HeadMoved(&r);
  if (ring) h.c->RingDoorbell(r, kind, handle);
}

// --- operations ----------------------------------------------------------

// A well-formed work request of the kinds the client's QPs can run.
void PostValid(Hostile& h, Input& in) {
  const uint8_t kind = in.U8();
  // Offsets anywhere in the region: a length may run past its end.
  const uint32_t len = in.U16() % 2048;
  const uint32_t off = in.U16() % kALen;
  const uint32_t roff = in.U16() % kALen;
  const bool proc = h.has_p && (kind & 0x80) != 0;
  const WireSge local =
      proc ? WireSge{reinterpret_cast<uint64_t>(g_proc + kPOff) + off % 1024,
                     len % 1024, h.key_p}
           : WireSge{kIovaA + off, len, h.key_a};
  SqSlot s{};
  s.send_flags = (kind & 0x40) != 0 ? 0 : rocemu::nic::send_flags::kSignaled;
  s.num_sge = 1;
  s.sge[0] = local;
  s.remote_addr = kIovaA + roff;
  s.rkey = h.key_a;
  int qp = 0;
  RqSlot r{};
  r.num_sge = 1;
  r.sge[0] = WireSge{kIovaA + roff, 2048, h.key_a};
  switch ((kind & 0x0F) % 10) {  // bits 6 and 7 are flags
    case 0:                      // SEND 0 -> 1 (SRQ)
      s.opcode = 2;
      break;
    case 1:  // SEND 1 -> 0
      s.opcode = 2;
      qp = 1;
      break;
    case 2:
      s.opcode = 0;  // WRITE
      break;
    case 3:
      s.opcode = 4;  // READ
      s.sge[0].length = std::min<uint32_t>(s.sge[0].length, 1024);
      break;
    case 4:
    case 5:  // CAS, FAA on an aligned word
      s.opcode = (kind & 0x0F) % 10 == 4 ? 5 : 6;
      s.sge[0].addr &= ~7ull;
      s.sge[0].length = 8;
      s.remote_addr &= ~7ull;
      s.compare_add = in.U8();
      s.swap = in.U8();
      break;
    case 6:  // UD to itself
      s.opcode = 2;
      s.sge[0].length = std::min<uint32_t>(s.sge[0].length, 1024);
      s.ah = h.ah;
      s.remote_qpn = h.qp[2].qpn;
      s.remote_qkey = kQkey;
      qp = 2;
      break;
    case 7:  // WRITE with immediate 1 -> 0
      s.opcode = 1;
      s.imm_data = in.U32();
      qp = 1;
      break;
    case 8: {  // inline SEND 0 -> 1
      s.opcode = 2;
      s.send_flags |= rocemu::nic::send_flags::kInline;
      s.inline_len = len % 64;
      std::memset(s.inline_data, kind, s.inline_len);
      break;
    }
    default: {  // receives: QP 0's RQ, the SRQ, the UD QP's RQ
      const uint8_t where = in.U8() % 3;
      if (where == 1) {
        r.wr_id = h.Tag(8);
        h.c->PostSrqRecv(h.srq, r);
        h.HeadMoved(&h.srq.ring);
      } else {
        RawQp& to = h.qp[where == 0 ? 0 : 2];
        if (where == 2) r.sge[0].length = 1024 + 40;
        r.wr_id = h.Tag(h.RingId(&to.rq));
        h.c->PostRecv(to, r);
        h.HeadMoved(&to.rq);
      }
      return;
    }
  }
  s.wr_id = h.Tag(2 * qp);
  h.c->PostSend(h.qp[qp], s);
  h.HeadMoved(&h.qp[qp].sq);
}

void CraftSend(Hostile& h, Input& in) {
  const int q = in.U8() % 4;
  SqSlot s{};
  s.wr_id = WrId(h, in, 2 * q);
  const uint8_t op = in.U8();
  s.opcode = op < 220 ? op % 10 : op;
  s.num_sge = in.U8();
  const uint8_t fl = in.U8();
  s.send_flags = fl < 240 ? fl & 0x1F : in.U32();
  s.imm_data = in.U32();
  s.invalidate_rkey = Key(h, in);
  s.remote_addr = Address(h, in);
  s.rkey = Key(h, in);
  const uint8_t il = in.U8();
  s.inline_len = il < 200 ? il * 3u : Length(in);
  s.compare_add = in.U64();
  s.swap = in.U64();
  const uint8_t ah = in.U8();
  s.ah = ah < 128 ? h.ah : ah < 192 ? 0 : in.U32();
  s.remote_qpn = Qpn(h, in);
  s.remote_qkey = in.U8() < 200 ? kQkey : in.U32();
  const uint32_t n = std::min<uint32_t>(s.num_sge, rocemu::nic::kMaxSge);
  const uint8_t given = in.U8() % 5;
  for (uint32_t i = 0; i < n; ++i) {
    s.sge[i] = i < given ? Sge(h, in) : WireSge{kIovaA + i * 64, 64, h.key_a};
  }
  if ((s.send_flags & rocemu::nic::send_flags::kInline) != 0) {
    std::memset(s.inline_data, 0xC3,
                std::min<size_t>(s.inline_len, sizeof(s.inline_data)));
  }
  const uint8_t how = in.U8();
  RawRing& r = h.qp[q].sq;
  // Written at the head, or further on without publishing (a later
  // publish or head change exposes it).
  std::memcpy(r.Slot(r.index + (how & 3)), &s, sizeof(s));
  if ((how & 3) == 0 && (how & 4) == 0) {
    PublishAndRing(h, r, DoorbellKind::kSq, h.qp[q].qpn, (how & 8) == 0);
  }
}

void CraftRecv(Hostile& h, Input& in) {
  const uint8_t where = in.U8();
  RawRing& r = where % 3 == 1 ? h.srq.ring : h.qp[where % 3 == 0 ? 0 : 2].rq;
  RqSlot s{};
  s.wr_id = WrId(h, in, h.RingId(&r));
  const uint8_t ns = in.U8();
  s.num_sge = ns < 240 ? ns % 40 : in.U32();
  const uint8_t given = in.U8() % 5;
  const uint32_t n = std::min<uint32_t>(s.num_sge, rocemu::nic::kMaxSge);
  for (uint32_t i = 0; i < n; ++i) {
    s.sge[i] = i < given ? Sge(h, in) : WireSge{kIovaA + i * 64, 64, h.key_a};
  }
  const uint8_t how = in.U8();
  std::memcpy(r.Slot(r.index + (how & 3)), &s, sizeof(s));
  if ((how & 3) == 0 && (how & 4) == 0) {
    const DoorbellKind k =
        where % 3 == 1 ? DoorbellKind::kSrq : DoorbellKind::kRq;
    PublishAndRing(h, r, k,
                   where % 3 == 1 ? h.srq.handle : h.qp[where % 3 ? 2 : 0].qpn,
                   (how & 8) == 0);
  }
}

// Raw bytes over any slot of any work ring.
void PokeSlot(Hostile& h, Input& in) {
  bool cq;
  int ci;
  RawRing* r = Ring(h, in.U8(), &cq, &ci);
  const uint8_t delta = in.U8();
  const uint16_t at = in.U16();
  const uint64_t v = in.U64();
  const uint8_t width = 1u << (in.U8() % 4);
  if (!r->valid() || cq) return;  // CQ slots are the client's to read only
  uint8_t* slot = r->Slot(r->index + delta);
  const size_t pos = at % r->slot_size();
  const size_t n = std::min<size_t>(width, r->slot_size() - pos);
  uint64_t before;
  std::memcpy(&before, slot, sizeof(before));
  std::memcpy(slot + pos, &v, n);
  uint64_t after;
  std::memcpy(&after, slot, sizeof(after));
  if (r != &h.c->doorbells() && after != before &&
      (after & kTagMask) == kTagBits) {
    after ^= 1ull << 63;  // out of the tag space (see WrId)
    std::memcpy(slot, &after, sizeof(after));
  }
}

// Any header field of any ring, relative to the client's index or raw.
void SetIndex(Hostile& h, Input& in) {
  bool cq;
  int ci = 0;
  RawRing* r = Ring(h, in.U8(), &cq, &ci);
  const uint8_t field = in.U8();
  const uint8_t mode = in.U8();
  const uint64_t v = mode < 128   ? r->index + static_cast<int8_t>(in.U8())
                     : mode < 192 ? r->index + r->capacity() + in.U8() % 4
                                  : in.U64();
  if (!r->valid()) return;
  rocemu::verbs::RingHeader* hdr = r->hdr();
  switch (field % 8) {
    case 0:
      hdr->head.store(v);
      if (!cq) {
        r->index = v;  // the producer goes on from there
        h.HeadMoved(r);
      }
      break;
    case 1:
      hdr->tail.store(v);
      if (cq) r->index = v;
      h.TailWritten(r);
      break;
    case 2:
      hdr->retired.store(v);
      break;
    case 3:
      hdr->arm.store(static_cast<uint32_t>(v));
      break;
    case 4:
      hdr->doorbell.store(static_cast<uint32_t>(v));
      break;
    case 5:
      hdr->signals.store(v);
      break;
    case 6:  // the geometry the server copied when it made the ring
      hdr->capacity = static_cast<uint32_t>(v);
      hdr->slot_size = static_cast<uint32_t>(v >> 32);
      break;
    default:  // publish n more: slots as they are (stale or stamped)
      r->Publish(1 + v % 8);
      h.HeadMoved(r);
      break;
  }
  // The client's own reading of its CQ is off from then on.
  if (cq && (field % 8 <= 1 || field % 8 == 7)) h.cq_tainted[ci] = true;
}

// A doorbell naming anything, pushed raw, with or without its flag.
void Doorbell(Hostile& h, Input& in) {
  const uint8_t kind = in.U8();
  DoorbellSlot d;
  d.kind = kind < 200 ? 1 + kind % 3 : in.U32();
  const uint8_t which = in.U8();
  d.handle = which < 128   ? h.qp[which % 4].qpn
             : which < 192 ? h.srq.handle
                           : in.U32();
  RawRing& db = h.c->doorbells();
  if (!db.valid()) return;
  db.Push(d);
  if ((which & 1) != 0) {
    const uint64_t one = 1;
    (void)!write(h.c->wake_fd(), &one, sizeof(one));
  }
}

void Step(World& w, Input& in) {
  const uint8_t k = in.U8();
  const uint8_t e = in.U8();
  for (int i = 0; i <= (k & 3); ++i) Pass(w, (k & 4) == 0, (k & 8) != 0);
  w.now += uint64_t{1} << (e % 28);  // up to 134 ms: timers fire
}

void Control(Hostile& h, Input& in) {
  RawVerbsClient& c = *h.c;
  const uint8_t sub = in.U8();
  const uint8_t arg = in.U8();
  switch (sub % 11) {
    case 0: {
      static constexpr uint8_t kStates[] = {0, 1, 2, 3, 4, 6, 9};
      c.SetState(h.qp[arg % 4].qpn, kStates[(arg >> 2) % 7]);
      break;
    }
    case 1:  // back to work after an error
      c.SetState(h.qp[0].qpn, testing::kWireReset);
      c.SetState(h.qp[1].qpn, testing::kWireReset);
      c.ConnectRc(h.qp[0].qpn, h.qp[1].qpn, h.w.self);
      c.ConnectRc(h.qp[1].qpn, h.qp[0].qpn, h.w.self);
      break;
    case 2: {
      wire::HandleReq q{h.qp[arg % 4].qpn, 0};
      c.Call(wire::MsgType::kDestroyQp, q);
      break;
    }
    case 3: {
      wire::HandleReq q{arg % 3 == 0   ? h.key_a
                        : arg % 3 == 1 ? h.key_r
                                       : h.key_p,
                        0};
      c.Call(wire::MsgType::kDeregMr, q);
      break;
    }
    case 4:  // a tainted CQ stays so: its unconsumed entries move over
      c.ResizeCq(&h.cq[arg & 1], 1 + (arg >> 1));
      break;
    case 5: {
      wire::ModifySrqReq q{h.srq.handle, 2, {0, 0, arg % 8u}};
      c.Call(wire::MsgType::kModifySrq, q);
      break;
    }
    case 6: {
      wire::AllocMwReq q{h.pd, 2};
      wire::HandleResp r{};
      if (c.Call(wire::MsgType::kAllocMw, q, &r) == 0) h.mw = r.handle;
      break;
    }
    case 7: {  // any request body, not waited for
      uint8_t body[wire::kMaxMessage];
      const size_t len = in.U8();
      for (size_t i = 0; i < len; ++i) body[i] = in.U8();
      uint8_t msg[wire::kMaxMessage];
      const size_t n = wire::EncodeRequest(
          static_cast<wire::MsgType>(arg % (wire::kMaxMsgType + 2)),
          c.next_seq(), body, len, msg);
      if (n != 0) c.SendRaw(msg, (sub & 0x80) != 0 ? n - n / 3 : n);
      Pass(h.w);
      break;
    }
    case 8: {
      wire::HandleReq q{h.qp[arg % 4].qpn, 0};
      wire::QueryQpResp r{};
      c.Call(wire::MsgType::kQueryQp, q, &r);
      break;
    }
    case 9: {
      wire::HandleReq q{h.cq[arg & 1].handle, 0};
      c.Call(wire::MsgType::kDestroyCq, q);
      c.Call(wire::MsgType::kDestroySrq, wire::HandleReq{h.srq.handle, 0});
      break;
    }
    default:
      c.ReadyUd(h.qp[2].qpn, kQkey);
      break;
  }
}

// --- the well-behaved client --------------------------------------------

void RunGoodClient(World& w, bool doorbells) {
  RawVerbsClient g(w.path, [&w] { Pass(w); });
  if (!g.connected()) Fail("good client: connect");
  uint32_t pd = 0, key = 0;
  RawCq cq;
  RawQp a, b;
  const wire::WireQpCap cap{4, 4, 1, 1, 0};
  constexpr uint64_t kIova = 0x600000000000;
  if (g.Hello() != 0 || g.AllocPd(&pd) != 0 ||
      (doorbells && g.OpenDoorbells() != 0) ||
      g.RegMr(pd, w.good_fd, 0, 8192, kIova, 0xF, &key) != 0 ||
      g.CreateCq(16, &cq) != 0 ||
      g.CreateQp(pd, testing::kWireRc, cq.handle, cq.handle, cap, nullptr,
                 &a) != 0 ||
      g.CreateQp(pd, testing::kWireRc, cq.handle, cq.handle, cap, nullptr,
                 &b) != 0 ||
      g.ConnectRc(a.qpn, b.qpn, w.self) != 0 ||
      g.ConnectRc(b.qpn, a.qpn, w.self) != 0) {
    Fail("good client: setup refused");
  }
  // What the good client's buffer holds before (1 KiB of pattern, zeros)
  // and must hold after (the SEND's 512 bytes at 4096, the WRITE's at
  // 2048): made once, compared with memcmp rather than byte by byte.
  static const std::array<std::array<uint8_t, 8192>, 2> kGood = [] {
    std::array<std::array<uint8_t, 8192>, 2> g{};
    for (size_t i = 0; i < 1024; ++i) g[0][i] = g[1][i] = GuardByte(i, 0x44);
    for (size_t i = 0; i < 512; ++i) {
      g[1][4096 + i] = GuardByte(i, 0x44);
      g[1][2048 + i] = GuardByte(512 + i, 0x44);
    }
    return g;
  }();
  std::memcpy(w.good, kGood[0].data(), 8192);
  RqSlot r{};
  r.wr_id = 3;
  r.num_sge = 1;
  r.sge[0] = {kIova + 4096, 1024, key};
  SqSlot send{};
  send.wr_id = 1;
  send.opcode = 2;
  send.send_flags = rocemu::nic::send_flags::kSignaled;
  send.num_sge = 1;
  send.sge[0] = {kIova, 512, key};
  SqSlot rdma = send;
  rdma.wr_id = 2;
  rdma.opcode = 0;
  rdma.sge[0] = {kIova + 512, 512, key};
  rdma.remote_addr = kIova + 2048;
  rdma.rkey = key;
  if (!g.PostRecv(b, r) || !g.PostSend(a, send) || !g.PostSend(a, rdma)) {
    Fail("good client: ring full");
  }
  int seen[4] = {0, 0, 0, 0};
  int total = 0;
  for (int pass = 0; pass < 400 && total < 3; ++pass) {
    Pass(w);
    CqeSlot e;
    while (cq.ring.Pop(&e)) {
      ++total;
      if (e.wr_id < 1 || e.wr_id > 3 || seen[e.wr_id]++ != 0) {
        Fail("good client: unexpected or repeated completion");
      }
      if (e.status != 0) Fail("good client: a completion failed");
      if (e.wr_id == 3 && (e.byte_len != 512 || e.qp_num != b.qpn)) {
        Fail("good client: the receive completion is wrong");
      }
    }
  }
  if (total != 3) Fail("good client: completions missing");
  for (int pass = 0; pass < 4; ++pass) Pass(w);
  CqeSlot extra;
  if (cq.ring.Pop(&extra)) Fail("good client: a completion too many");
  if (std::memcmp(w.good + 4096, kGood[1].data() + 4096, 512) != 0 ||
      std::memcmp(w.good + 2048, kGood[1].data() + 2048, 512) != 0) {
    Fail("good client: the bytes did not arrive intact");
  }
  if (std::memcmp(w.good, kGood[1].data(), 8192) != 0) {
    Fail("good client: a stray byte");
  }
  ++w.stats.good_runs;
}

// The server lets go of every client that left, and of everything it held.
void ExpectAllGone(World& w) {
  for (int i = 0; i < 16 && w.server->num_clients() != 0; ++i) Pass(w);
  if (w.server->num_clients() != 0) Fail("a departed client is still held");
  bool qp_left = false;
  w.rnic->ForEachQp([&](const rocemu::nic::Qp& qp) {
    if (w.server->QpOwner(qp.qpn()).has_value()) qp_left = true;
  });
  if (qp_left) Fail("a departed client's QP is still owned");
}

}  // namespace

int FuzzOne(const uint8_t* data, size_t size) {
  World& w = W();
  ++w.stats.inputs;
  std::memcpy(w.buf, g_ref_buf, kBufLen);
  std::memcpy(g_proc, g_ref_proc, kProcLen);
  Input in(data, size);
  const uint8_t flags = in.U8();
  {
    Hostile h(w);
    g_hostile = &h;
    if (!SetUpHostile(h, flags)) Fail("hostile client: setup refused");
    h.c->set_max_passes(4);
    for (int ops = 0; !in.empty() && ops < 512; ++ops) {
      const uint8_t op = in.U8();
      static const bool trace = std::getenv("ROCEMU_FUZZ_TRACE") != nullptr;
      if (trace) std::fprintf(stderr, "op %d\n", op % 12);
      switch (op % 12) {
        case 0:
        case 1:
          PostValid(h, in);
          break;
        case 2:
          CraftSend(h, in);
          break;
        case 3:
          CraftRecv(h, in);
          break;
        case 4:
          PokeSlot(h, in);
          break;
        case 5:
          SetIndex(h, in);
          break;
        case 6:
          Doorbell(h, in);
          break;
        case 7:
        case 8:
          Step(w, in);
          break;
        case 9:
          PollHostile(h);
          break;
        default:
          Control(h, in);
          break;
      }
      if (op % 12 >= 7 && h.c->Closed()) break;
    }
    for (int i = 0; i < 8; ++i) Pass(w);
    PollHostile(h);
    // Served or disconnected, never ignored.
    if (h.c->Closed()) {
      ++w.stats.disconnected;
    } else {
      h.c->set_max_passes(16);
      wire::QueryDeviceResp r{};
      const int err = h.c->Call(wire::MsgType::kQueryDevice, wire::Empty{}, &r);
      if (err == 0) {
        ++w.stats.served;
      } else if (h.c->Closed()) {
        ++w.stats.disconnected;
      } else {
        Fail("a connected client is no longer served");
      }
    }
    // A well-behaved client meanwhile, the hostile one still attached.
    RunGoodClient(w, (flags & 2) != 0);
    PollHostile(h);
    h.c.reset();
    ExpectAllGone(w);
    g_hostile = nullptr;
  }
  CheckMemory(w);
  return 0;
}

}  // namespace rocemu::ring_fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return rocemu::ring_fuzz::FuzzOne(data, size);
}
