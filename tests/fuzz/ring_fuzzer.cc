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
// ROCEMU_FUZZ_TRACE=1 each operation and completion.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "nic/rnic.h"
#include "tests/verbs/raw_verbs_client.h"
#include "verbs/session_server.h"

namespace {

using rocemu::nic::Rnic;
using rocemu::verbs::CqeSlot;
using rocemu::verbs::DoorbellKind;
using rocemu::verbs::DoorbellSlot;
using rocemu::verbs::RqSlot;
using rocemu::verbs::SessionServer;
using rocemu::verbs::SqSlot;
using rocemu::verbs::WireSge;
using rocemu::verbs::testing::RawAddress;
using rocemu::verbs::testing::RawCq;
using rocemu::verbs::testing::RawQp;
using rocemu::verbs::testing::RawRing;
using rocemu::verbs::testing::RawSrq;
using rocemu::verbs::testing::RawVerbsClient;
namespace wire = rocemu::verbs::wire;
namespace testing = rocemu::verbs::testing;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "ring_fuzzer: %s\n", what);
  std::abort();
}

// The hostile client's buffer: a sealed memfd of kBufLen bytes with two
// regions in it, guard bytes everywhere else.
constexpr size_t kBufLen = 16384;
constexpr size_t kAOff = 1024, kALen = 6144;  // all access
constexpr size_t kROff = 8704, kRLen = 2048;  // no local write: read only
// Distinct from any host address, so that an iova taken for a pointer
// lands nowhere valid rather than in the region by chance.
constexpr uint64_t kIovaA = 0x7e5700001000, kIovaR = 0x7e5700800000;
// A process-memory region in the middle of a guarded static buffer, and a
// victim area the client never registers.
constexpr size_t kProcLen = 8192, kPOff = 512, kPLen = 2048;
alignas(4096) uint8_t g_proc[kProcLen];
alignas(4096) uint8_t g_victim[4096];
uint8_t g_ref_buf[kBufLen], g_ref_proc[kProcLen], g_ref_victim[4096];

constexpr uint32_t kQkey = 0x11111111;
constexpr uint64_t kTagMask = 0xFFFFFF0000000000ull;
constexpr uint64_t kTagBits = 0x7A6C5B0000000000ull;

struct Stats {
  uint64_t inputs = 0, served = 0, disconnected = 0, good_runs = 0;
  uint64_t tagged_cqes = 0, passes = 0;
};

struct World {
  std::unique_ptr<Rnic> rnic;
  std::unique_ptr<SessionServer> server;
  std::string path;
  rocemu::nic::TimeNs now = 1'000'000'000;
  RawAddress self;
  int buf_fd = -1;
  uint8_t* buf = nullptr;
  int good_fd = -1;
  uint8_t* good = nullptr;
  Stats stats;
};

uint8_t GuardByte(size_t i, uint8_t salt) {
  return static_cast<uint8_t>(salt + i * 131 + (i >> 9));
}

int SealedMemfd(size_t len, uint8_t** map) {
  const int fd = memfd_create("ring-fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(len)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    Fail("memfd");
  }
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) Fail("mmap");
  *map = static_cast<uint8_t*>(p);
  return fd;
}

World& W() {
  static World* w = [] {
    auto* w = new World;
    rocemu::nic::RnicConfig cfg;
    cfg.mac = {0x02, 0, 0, 0, 0, 0x01};
    cfg.gid = rocemu::nic::GidFromIpv4(10, 0, 0, 1);
    w->self = {cfg.gid, cfg.mac};
    w->rnic = std::make_unique<Rnic>(cfg);
    rocemu::verbs::SessionServerOptions o;
    w->path = "/tmp/rocemu-ring-fuzz-" + std::to_string(getpid()) + ".sock";
    o.socket_path = w->path;
    o.post_budget = 16;
    auto s = SessionServer::Create(*w->rnic, o);
    if (!s.ok()) Fail(std::string(s.status().message()).c_str());
    w->server = std::move(*s);
    w->buf_fd = SealedMemfd(kBufLen, &w->buf);
    w->good_fd = SealedMemfd(8192, &w->good);
    for (size_t i = 0; i < kBufLen; ++i) g_ref_buf[i] = GuardByte(i, 0x11);
    for (size_t i = 0; i < kProcLen; ++i) g_ref_proc[i] = GuardByte(i, 0x22);
    for (size_t i = 0; i < 4096; ++i) g_ref_victim[i] = GuardByte(i, 0x33);
    std::memcpy(g_victim, g_ref_victim, sizeof(g_victim));
    std::atexit([] {
      if (std::getenv("ROCEMU_FUZZ_STATE") != nullptr) {
        std::string out;
        W().server->AppendStateJson(&out);
        const Stats& k = W().stats;
        std::fprintf(stderr,
                     "%s\ninputs=%llu served=%llu disconnected=%llu "
                     "good_runs=%llu tagged_cqes=%llu passes=%llu\n",
                     out.c_str(), static_cast<unsigned long long>(k.inputs),
                     static_cast<unsigned long long>(k.served),
                     static_cast<unsigned long long>(k.disconnected),
                     static_cast<unsigned long long>(k.good_runs),
                     static_cast<unsigned long long>(k.tagged_cqes),
                     static_cast<unsigned long long>(k.passes));
      }
      unlink(W().path.c_str());
    });
    return w;
  }();
  return *w;
}

class Input {
 public:
  Input(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool empty() const { return n_ == 0; }
  uint8_t U8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t U16() { return static_cast<uint16_t>(U8() | U8() << 8); }
  uint32_t U32() { return U16() | static_cast<uint32_t>(U16()) << 16; }
  uint64_t U64() { return U32() | static_cast<uint64_t>(U32()) << 32; }

 private:
  const uint8_t* p_;
  size_t n_;
};

// The hostile client and what the invariants need to know of it.
struct Hostile {
  explicit Hostile(World& w) : w(w) {}
  World& w;
  std::unique_ptr<RawVerbsClient> c;
  uint32_t pd = 0, key_a = 0, key_r = 0, key_p = 0, ah = 0, mw = 0;
  bool has_p = false;
  RawCq cq[2];  // send, receive
  bool cq_tainted[2] = {false, false};
  RawSrq srq;
  RawQp qp[4];

  // The work rings, numbered: QP i's SQ 2i, its RQ 2i + 1, the SRQ 8.
  static constexpr int kRings = 9;
  RawRing& WorkRing(int i) {
    return i == 8 ? srq.ring : i % 2 == 0 ? qp[i / 2].sq : qp[i / 2].rq;
  }
  int RingId(const RawRing* r) {
    for (int i = 0; i < kRings; ++i) {
      if (&WorkRing(i) == r) return i;
    }
    return -1;
  }

  // Tags: serials below next_serial were handed out, serial_ring says to
  // which ring, completed which ones completed.
  uint64_t next_serial = 0;
  std::vector<uint8_t> serial_ring, completed;
  uint64_t Tag(int ring) {
    serial_ring.push_back(static_cast<uint8_t>(ring));
    return kTagBits | next_serial++;
  }
  // Every slot of every work ring gets a new tag: what the server takes in
  // the next pass is then tagged once, whatever the input did before.
  void Stamp() {
    for (int id = 0; id < kRings; ++id) {
      RawRing& r = WorkRing(id);
      if (!r.valid()) continue;
      for (uint32_t i = 0; i < r.capacity(); ++i) {
        const uint64_t t = Tag(id);
        std::memcpy(r.Slot(i), &t, sizeof(t));
      }
      server_tail[id] = r.hdr()->tail.load();
    }
  }

  // A producer that publishes more than the ring holds past the
  // consumer's index overwrites entries not taken yet; the server cannot
  // tell (each head it reads is within bounds of where it then is) and
  // takes the overwritten slot under both indices: the client served its
  // own WR twice. Its tags prove nothing from then on, as after a write of
  // the consumer's index.
  uint64_t server_tail[kRings] = {};
  bool ring_tainted[kRings] = {};
  void HeadMoved(const RawRing* r) {
    const int id = RingId(r);
    if (id >= 0 && r->index - server_tail[id] > r->capacity()) {
      ring_tainted[id] = true;
    }
  }
  void TailWritten(const RawRing* r) {
    const int id = RingId(r);
    if (id >= 0) ring_tainted[id] = true;
  }

  bool OwnsQpn(uint32_t qpn) const {
    for (const RawQp& q : qp) {
      if (q.qpn == qpn && q.sq.valid()) return true;
    }
    return false;
  }
};

Hostile* g_hostile = nullptr;

void CheckMemory(const World& w) {
  if (std::memcmp(w.buf, g_ref_buf, kAOff) != 0 ||
      std::memcmp(w.buf + kAOff + kALen, g_ref_buf + kAOff + kALen,
                  kROff - kAOff - kALen) != 0 ||
      std::memcmp(w.buf + kROff + kRLen, g_ref_buf + kROff + kRLen,
                  kBufLen - kROff - kRLen) != 0) {
    Fail("a guard byte of the client's buffer changed");
  }
  if (std::memcmp(w.buf + kROff, g_ref_buf + kROff, kRLen) != 0) {
    Fail("a region registered without local write changed");
  }
  if (std::memcmp(g_proc, g_ref_proc, kPOff) != 0 ||
      std::memcmp(g_proc + kPOff + kPLen, g_ref_proc + kPOff + kPLen,
                  kProcLen - kPOff - kPLen) != 0) {
    Fail("a guard byte around the process-memory region changed");
  }
  if (std::memcmp(g_victim, g_ref_victim, sizeof(g_victim)) != 0) {
    Fail("unregistered process memory changed");
  }
}

// One pass of the daemon: control (unless skipped), data, frames looped
// back, time; then the tags are renewed and the memory checked.
void Pass(World& w, bool control = true, bool sleep = false) {
  ++w.stats.passes;
  if (control) w.server->PollControl();
  w.server->PollData();
  testing::LoopFrames(*w.rnic, w.now);
  w.now += 50'000;
  if (sleep && w.server->PrepareToSleep()) w.server->Awake();
  if (g_hostile != nullptr) {
    g_hostile->Stamp();
  }
  CheckMemory(w);
}

// Completions of the hostile client's CQs, checked against the tags.
void PollHostile(Hostile& h) {
  for (int i = 0; i < 2; ++i) {
    if (h.cq_tainted[i] || !h.cq[i].ring.valid()) continue;
    CqeSlot e;
    for (int n = 0; n < 4096 && h.cq[i].ring.Pop(&e); ++n) {
      // ROCEMU_FUZZ_TRACE=1: each completion (corpus work).
      static const bool trace = std::getenv("ROCEMU_FUZZ_TRACE") != nullptr;
      if (trace) {
        std::fprintf(stderr,
                     "cq %d qp %u wr_id %llx status %u opcode %u len %u\n", i,
                     e.qp_num, static_cast<unsigned long long>(e.wr_id),
                     e.status, e.opcode, e.byte_len);
      }
      if (!h.OwnsQpn(e.qp_num)) Fail("a completion of another client's QP");
      if ((e.wr_id & kTagMask) != kTagBits) continue;
      const uint64_t serial = e.wr_id & ~kTagMask;
      if (serial >= h.next_serial) Fail("a completion of a WR never posted");
      if (h.ring_tainted[h.serial_ring[serial]]) continue;
      if (h.completed.size() <= serial) h.completed.resize(serial + 4096);
      if (h.completed[serial]) Fail("one posted slot completed twice");
      h.completed[serial] = 1;
      ++h.w.stats.tagged_cqes;
    }
  }
}

bool SetUpHostile(Hostile& h, uint8_t flags) {
  World& w = h.w;
  h.c = std::make_unique<RawVerbsClient>(w.path, [&w] { Pass(w); });
  RawVerbsClient& c = *h.c;
  if (!c.connected()) Fail("connect");
  if (c.Hello() != 0 || c.AllocPd(&h.pd) != 0) return false;
  if ((flags & 1) != 0 && c.OpenDoorbells() != 0) return false;
  if (c.RegMr(h.pd, w.buf_fd, kAOff, kALen, kIovaA, 0xF, &h.key_a) != 0 ||
      c.RegMr(h.pd, w.buf_fd, kROff, kRLen, kIovaR, 0, &h.key_r) != 0) {
    return false;
  }
  if ((flags & 4) != 0) {
    h.has_p = c.RegProcessMr(h.pd, g_proc + kPOff, kPLen, 0xF, &h.key_p) == 0;
  }
  if (c.CreateCq(32, &h.cq[0]) != 0 || c.CreateCq(32, &h.cq[1]) != 0 ||
      c.CreateSrq(h.pd, 8, 4, &h.srq) != 0) {
    return false;
  }
  const wire::WireQpCap cap{8, 8, 4, 4, 64};
  if (c.CreateQp(h.pd, testing::kWireRc, h.cq[0].handle, h.cq[1].handle, cap,
                 nullptr, &h.qp[0]) != 0 ||
      c.CreateQp(h.pd, testing::kWireRc, h.cq[0].handle, h.cq[1].handle, cap,
                 &h.srq, &h.qp[1]) != 0 ||
      c.CreateQp(h.pd, testing::kWireUd, h.cq[0].handle, h.cq[1].handle, cap,
                 nullptr, &h.qp[2]) != 0 ||
      c.CreateQp(h.pd, testing::kWireRc, h.cq[0].handle, h.cq[1].handle, cap,
                 nullptr, &h.qp[3]) != 0) {
    return false;
  }
  return c.ConnectRc(h.qp[0].qpn, h.qp[1].qpn, w.self) == 0 &&
         c.ConnectRc(h.qp[1].qpn, h.qp[0].qpn, w.self) == 0 &&
         c.ReadyUd(h.qp[2].qpn, kQkey) == 0 &&
         c.CreateAh(h.pd, w.self, &h.ah) == 0;
}

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
  for (size_t i = 0; i < 8192; ++i) {
    w.good[i] = i < 1024 ? GuardByte(i, 0x44) : 0;
  }
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
  for (size_t i = 0; i < 512; ++i) {
    if (w.good[4096 + i] != GuardByte(i, 0x44) ||
        w.good[2048 + i] != GuardByte(512 + i, 0x44)) {
      Fail("good client: the bytes did not arrive intact");
    }
  }
  for (size_t i = 1024; i < 8192; ++i) {
    const bool target = (i >= 2048 && i < 2560) || (i >= 4096 && i < 4608);
    if (!target && w.good[i] != 0) Fail("good client: a stray byte");
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
