#include "tests/fuzz/ring_fuzzer_world.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/scratch_socket.h"

namespace rocemu::ring_fuzz {
namespace {

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

}  // namespace

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "ring_fuzzer: %s\n", what);
  std::abort();
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
    w->path = rocemu::fuzz::ScratchSocketPath("rocemu-ring-fuzz");
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

void Pass(World& w, bool control, bool sleep) {
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

}  // namespace rocemu::ring_fuzz
