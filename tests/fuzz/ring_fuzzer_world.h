// The ring fuzzer's world (tests/fuzz/ring_fuzzer.cc): one RNIC and
// session server that live across inputs as a daemon does, the hostile
// client's buffer with its guard bytes, what the invariants know of the
// hostile client, and the daemon's pass that checks them.
#ifndef ROCEMU_TESTS_FUZZ_RING_FUZZER_WORLD_H_
#define ROCEMU_TESTS_FUZZ_RING_FUZZER_WORLD_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "nic/rnic.h"
#include "tests/verbs/raw_verbs_client.h"
#include "verbs/server/session_server.h"

namespace rocemu::ring_fuzz {

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

[[noreturn]] void Fail(const char* what);

// The pattern of guard byte i of an area (each area its own salt).
inline uint8_t GuardByte(size_t i, uint8_t salt) {
  return static_cast<uint8_t>(salt + i * 131 + (i >> 9));
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
alignas(4096) inline uint8_t g_proc[kProcLen];
alignas(4096) inline uint8_t g_victim[4096];
inline uint8_t g_ref_buf[kBufLen], g_ref_proc[kProcLen], g_ref_victim[4096];

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

// The one world of this process (created on first use).
World& W();

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

inline Hostile* g_hostile = nullptr;

// Fails unless every guarded byte is as it was.
void CheckMemory(const World& w);
// One pass of the daemon: control (unless skipped), data, frames looped
// back, time; then the tags are renewed and the memory checked.
void Pass(World& w, bool control = true, bool sleep = false);
// Completions of the hostile client's CQs, checked against the tags.
void PollHostile(Hostile& h);
// PD, regions, CQs, SRQ and the four QPs; false if the server refused.
bool SetUpHostile(Hostile& h, uint8_t flags);

}  // namespace rocemu::ring_fuzz

#endif  // ROCEMU_TESTS_FUZZ_RING_FUZZER_WORLD_H_
