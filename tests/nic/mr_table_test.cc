#include "nic/mr_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <numeric>
#include <vector>

#include "nic/pd_table.h"

namespace rocemu::nic {
namespace {

constexpr ClientId kClient = 7;
constexpr AccessFlags kAllRights = access::kLocalWrite | access::kRemoteWrite |
                                   access::kRemoteRead | access::kRemoteAtomic;

class MrTableTest : public ::testing::Test {
 protected:
  MrTableTest() : pds_(16), mrs_(pds_, 64, uint64_t{1} << 40) {
    buf_.resize(4096);
    std::iota(buf_.begin(), buf_.end(), 0);
    pd_ = *pds_.Alloc(kClient);
    other_pd_ = *pds_.Alloc(kClient);
  }
  uint32_t Reg(uint64_t iova, uint64_t len, AccessFlags acc) {
    HostChunk c{buf_.data(), len};
    absl::StatusOr<uint32_t> k =
        mrs_.Register(kClient, pd_, iova, len, acc, std::span(&c, 1));
    EXPECT_TRUE(k.ok()) << k.status();
    return k.value_or(0);
  }
  MrStatus Remote(uint32_t key, uint64_t va, uint64_t len, AccessFlags need,
                  PdHandle pd = 0) {
    const MemoryRegion* mr;
    return mrs_.CheckRemote(key, pd ? pd : pd_, 0, va, len, need, &mr);
  }
  MrStatus Local(uint32_t key, uint64_t va, uint64_t len, AccessFlags need) {
    const MemoryRegion* mr;
    return mrs_.CheckLocal(key, pd_, va, len, need, &mr);
  }

  std::vector<uint8_t> buf_;
  PdTable pds_;
  MrTable mrs_;
  PdHandle pd_, other_pd_;
};

TEST_F(MrTableTest, KeyLayoutAndLookup) {
  uint32_t k = Reg(0x10000, 4096, kAllRights);
  EXPECT_NE(k >> 8, 0u);  // index 0 is never handed out
  const MemoryRegion* mr = mrs_.Find(k);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->lkey(), k);
  EXPECT_EQ(mr->rkey(), k);
  EXPECT_EQ(mr->iova(), 0x10000u);
  EXPECT_EQ(mr->length(), 4096u);
  EXPECT_EQ(mr->pd(), pd_);
  // Same index, wrong key byte: refused.
  EXPECT_EQ(mrs_.Find(k ^ 0x01), nullptr);
  EXPECT_EQ(mrs_.Find((k & ~0xFFu) | ((k + 0x80) & 0xFF)), nullptr);
  EXPECT_EQ(mrs_.Find(0), nullptr);
  EXPECT_EQ(mrs_.Find(0xFFFFFF00u), nullptr);
  EXPECT_EQ(pds_.UseCount(pd_), 1u);
}

TEST_F(MrTableTest, RegistrationArgumentChecks) {
  HostChunk c{buf_.data(), 4096};
  auto reg = [&](PdHandle pd, uint64_t iova, uint64_t len, AccessFlags acc,
                 HostChunk chunk, ClientId client = kClient) {
    return mrs_.Register(client, pd, iova, len, acc, std::span(&chunk, 1))
        .status()
        .code();
  };
  EXPECT_EQ(reg(pd_, 0, 4096, access::kRemoteWrite, c),
            absl::StatusCode::kInvalidArgument);  // no local write
  EXPECT_EQ(reg(pd_, 0, 4096, access::kRemoteAtomic, c),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reg(pd_, ~uint64_t{0} - 100, 4096, access::kLocalWrite, c),
            absl::StatusCode::kInvalidArgument);  // wraps
  EXPECT_EQ(reg(pd_, 0, 4097, access::kLocalWrite, c),
            absl::StatusCode::kInvalidArgument);  // chunks too short
  EXPECT_EQ(reg(pd_, 0, 4096, access::kLocalWrite, HostChunk{nullptr, 4096}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(reg(pd_ + 0x1000, 0, 4096, access::kLocalWrite, c),
            absl::StatusCode::kNotFound);  // no such PD
  EXPECT_EQ(reg(pd_, 0, 4096, access::kLocalWrite, c, kClient + 1),
            absl::StatusCode::kNotFound);  // another client's PD
  EXPECT_EQ(mrs_.size(), 0u);
  EXPECT_EQ(pds_.UseCount(pd_), 0u);
}

// A zero-length host region (what ibv_reg_dm_mr makes of a 0-byte DM MR on
// mlx5) registers but grants no byte; a process region may not be empty.
TEST_F(MrTableTest, EmptyHostRegionGrantsNothing) {
  const uint32_t k = Reg(0, 0, kAllRights);
  ASSERT_NE(k, 0u);
  EXPECT_EQ(Local(k, 0, 0, access::kLocalWrite), MrStatus::kOk);
  EXPECT_EQ(Local(k, 0, 1, access::kLocalWrite), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, 0, 8, access::kRemoteRead), MrStatus::kOutOfBounds);
  EXPECT_EQ(mrs_.RegisterProcess(kClient, pd_, getpid(), 0x1000, 0,
                                 access::kLocalWrite)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(mrs_.Deregister(kClient, k).ok());
  EXPECT_EQ(mrs_.size(), 0u);
}

TEST_F(MrTableTest, KeyByteChangesOnReregistrationAndReuse) {
  uint32_t k1 = Reg(0x1000, 4096, kAllRights);
  absl::StatusOr<uint32_t> k2 =
      mrs_.Reregister(kClient, k1, rereg::kChangeAccess, 0, 0, 0,
                      access::kLocalWrite | access::kRemoteRead, {});
  ASSERT_TRUE(k2.ok()) << k2.status();
  EXPECT_EQ(*k2 >> 8, k1 >> 8);      // same slot
  EXPECT_NE(*k2 & 0xFF, k1 & 0xFF);  // new key byte
  // The old key is stale everywhere.
  EXPECT_EQ(mrs_.Find(k1), nullptr);
  EXPECT_EQ(Remote(k1, 0x1000, 8, access::kRemoteRead), MrStatus::kInvalidKey);
  EXPECT_EQ(Local(k1, 0x1000, 8, access::kNone), MrStatus::kInvalidKey);
  EXPECT_EQ(Remote(*k2, 0x1000, 8, access::kRemoteRead), MrStatus::kOk);
  // The access change took effect.
  EXPECT_EQ(Remote(*k2, 0x1000, 8, access::kRemoteWrite),
            MrStatus::kAccessDenied);
  EXPECT_EQ(mrs_.Deregister(kClient, k1).code(), absl::StatusCode::kNotFound);

  // Deregistered: key refused, and every later key differs from all old
  // ones even when a slot is reused.
  ASSERT_TRUE(mrs_.Deregister(kClient, *k2).ok());
  EXPECT_EQ(Remote(*k2, 0x1000, 8, access::kRemoteRead), MrStatus::kInvalidKey);
  EXPECT_EQ(mrs_.Deregister(kClient, *k2).code(), absl::StatusCode::kNotFound);
  std::vector<uint32_t> seen = {k1, *k2};
  for (int i = 0; i < 200; ++i) {
    uint32_t k = Reg(0x1000, 4096, kAllRights);
    for (uint32_t old : seen) ASSERT_NE(k, old) << i;
    seen.push_back(k);
    ASSERT_TRUE(mrs_.Deregister(kClient, k).ok());
  }
  EXPECT_EQ(pds_.UseCount(pd_), 0u);
}

TEST_F(MrTableTest, ReregisterTranslationAndPd) {
  uint32_t k = Reg(0x1000, 4096, kAllRights);
  HostChunk c{buf_.data() + 100, 50};
  absl::StatusOr<uint32_t> k2 =
      mrs_.Reregister(kClient, k, rereg::kChangeTranslation | rereg::kChangePd,
                      other_pd_, 0x9000, 50, 0, std::span(&c, 1));
  ASSERT_TRUE(k2.ok()) << k2.status();
  EXPECT_EQ(Remote(*k2, 0x9000, 50, access::kRemoteRead, other_pd_),
            MrStatus::kOk);
  EXPECT_EQ(Remote(*k2, 0x9000, 51, access::kRemoteRead, other_pd_),
            MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(*k2, 0x9000, 8, access::kRemoteRead), MrStatus::kPdMismatch);
  uint64_t first = 0;
  ASSERT_EQ(mrs_.Find(*k2)->Load64(0x9000, &first), MrStatus::kOk);
  EXPECT_EQ(first & 0xFF, 100u);
  EXPECT_EQ(pds_.UseCount(pd_), 0u);
  EXPECT_EQ(pds_.UseCount(other_pd_), 1u);
  // A failed rereg leaves the region and its key alone.
  EXPECT_FALSE(mrs_.Reregister(kClient, *k2, rereg::kChangeTranslation, 0,
                               0x9000, 51, 0, std::span(&c, 1))
                   .ok());
  EXPECT_FALSE(mrs_.Reregister(kClient, *k2, 0, 0, 0, 0, 0, {}).ok());
  EXPECT_FALSE(mrs_.Reregister(kClient, *k2, rereg::kChangeAccess, 0, 0, 0,
                               access::kRemoteWrite, {})
                   .ok());
  EXPECT_EQ(Remote(*k2, 0x9000, 50, access::kRemoteRead, other_pd_),
            MrStatus::kOk);
}

TEST_F(MrTableTest, BoundsOffByOneAndWrap) {
  const uint64_t base = 0x200000;
  uint32_t k = Reg(base, 4096, kAllRights);
  const AccessFlags r = access::kRemoteRead;
  EXPECT_EQ(Remote(k, base, 4096, r), MrStatus::kOk);
  EXPECT_EQ(Remote(k, base + 4095, 1, r), MrStatus::kOk);
  EXPECT_EQ(Remote(k, base - 1, 1, r), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, base - 1, 4096, r), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, base, 4097, r), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, base + 1, 4096, r), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, base + 4096, 1, r), MrStatus::kOutOfBounds);
  // va + len wrapping past 2^64 must not look like a small range.
  EXPECT_EQ(Remote(k, base + 8, ~uint64_t{0} - 4, r), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, ~uint64_t{0}, 2, r), MrStatus::kOutOfBounds);
  EXPECT_EQ(Local(k, base + 4000, 97, access::kLocalWrite),
            MrStatus::kOutOfBounds);
  EXPECT_EQ(Local(k, base + 4000, 96, access::kLocalWrite), MrStatus::kOk);
  // Zero-length access needs no valid key at all (IBTA: no R_Key check).
  EXPECT_EQ(Remote(0xDEAD00, 0, 0, access::kRemoteWrite), MrStatus::kOk);
}

TEST_F(MrTableTest, RightsAndPd) {
  uint32_t ro = Reg(0, 4096, access::kRemoteRead);
  uint32_t rw = Reg(0x10000, 4096, access::kLocalWrite | access::kRemoteWrite);
  EXPECT_EQ(Remote(ro, 0, 8, access::kRemoteRead), MrStatus::kOk);
  EXPECT_EQ(Remote(ro, 0, 8, access::kRemoteWrite), MrStatus::kAccessDenied);
  EXPECT_EQ(Remote(ro, 0, 8, access::kRemoteAtomic), MrStatus::kAccessDenied);
  EXPECT_EQ(Local(ro, 0, 8, access::kNone), MrStatus::kOk);  // local read
  EXPECT_EQ(Local(ro, 0, 8, access::kLocalWrite), MrStatus::kAccessDenied);
  EXPECT_EQ(Remote(rw, 0x10000, 8, access::kRemoteWrite), MrStatus::kOk);
  EXPECT_EQ(Remote(rw, 0x10000, 8, access::kRemoteRead),
            MrStatus::kAccessDenied);
  EXPECT_EQ(Remote(rw, 0x10000, 8, access::kRemoteWrite, other_pd_),
            MrStatus::kPdMismatch);
  // PD busy while regions use it.
  EXPECT_EQ(pds_.Dealloc(kClient, pd_).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(mrs_.Deregister(kClient, ro).ok());
  EXPECT_EQ(mrs_.Deregister(kClient + 1, rw).code(),
            absl::StatusCode::kNotFound);  // not the owner
  ASSERT_TRUE(mrs_.Deregister(kClient, rw).ok());
  EXPECT_TRUE(pds_.Dealloc(kClient, pd_).ok());
}

TEST_F(MrTableTest, AtomicAlignmentAndSize) {
  uint32_t k = Reg(0x1000, 4096, kAllRights);
  const AccessFlags a = access::kRemoteAtomic;
  EXPECT_EQ(Remote(k, 0x1008, 8, a), MrStatus::kOk);
  EXPECT_EQ(Remote(k, 0x1004, 8, a), MrStatus::kMisaligned);
  EXPECT_EQ(Remote(k, 0x1001, 8, a), MrStatus::kMisaligned);
  EXPECT_EQ(Remote(k, 0x1000 + 4096, 8, a), MrStatus::kOutOfBounds);
  EXPECT_EQ(Remote(k, 0x1000 + 4088, 8, a), MrStatus::kOk);
  EXPECT_EQ(Remote(k, 0x1008, 4, a), MrStatus::kOutOfBounds);
  EXPECT_EQ(RemoteNakCode(MrStatus::kMisaligned),
            protocol::NakCode::kInvalidRequest);
  EXPECT_EQ(RemoteNakCode(MrStatus::kAccessDenied),
            protocol::NakCode::kRemoteAccessError);
  EXPECT_EQ(RemoteWcStatus(MrStatus::kOutOfBounds), WcStatus::kRemAccessErr);
  EXPECT_EQ(RemoteWcStatus(MrStatus::kMisaligned), WcStatus::kRemInvReqErr);
  EXPECT_EQ(LocalWcStatus(MrStatus::kInvalidKey), WcStatus::kLocProtErr);
  EXPECT_EQ(LocalWcStatus(MrStatus::kLengthExceeded), WcStatus::kLocLenErr);
}

TEST_F(MrTableTest, Invalidation) {
  uint32_t k = Reg(0x1000, 4096, kAllRights);
  EXPECT_EQ(mrs_.Invalidate(k, other_pd_, 0), MrStatus::kPdMismatch);
  EXPECT_EQ(mrs_.Invalidate(k ^ 1, pd_, 0), MrStatus::kInvalidKey);
  // An ibv_reg_mr region is not remotely invalidatable.
  EXPECT_EQ(mrs_.Invalidate(k, pd_, 0), MrStatus::kAccessDenied);
  EXPECT_TRUE(mrs_.Find(k)->valid());
  EXPECT_FALSE(mrs_.AllowRemoteInvalidate(kClient, k ^ 1).ok());
  ASSERT_TRUE(mrs_.AllowRemoteInvalidate(kClient, k).ok());
  EXPECT_EQ(mrs_.Invalidate(k, pd_, 0), MrStatus::kOk);
  EXPECT_FALSE(mrs_.Find(k)->valid());
  EXPECT_EQ(Remote(k, 0x1000, 8, access::kRemoteRead), MrStatus::kInvalidated);
  EXPECT_EQ(Local(k, 0x1000, 8, access::kNone), MrStatus::kInvalidated);
  absl::StatusOr<uint32_t> k2 = mrs_.Reregister(
      kClient, k, rereg::kChangeAccess, 0, 0, 0, kAllRights, {});
  ASSERT_TRUE(k2.ok());
  EXPECT_EQ(Remote(*k2, 0x1000, 8, access::kRemoteRead), MrStatus::kOk);
}

TEST_F(MrTableTest, LimitOfRegions) {
  PdTable pds(1);
  MrTable small(pds, 2, 1 << 20);
  PdHandle pd = *pds.Alloc(kClient);
  HostChunk c{buf_.data(), 16};
  auto one = std::span(&c, 1);
  ASSERT_TRUE(small.Register(kClient, pd, 0, 16, 0, one).ok());
  ASSERT_TRUE(small.Register(kClient, pd, 0, 16, 0, one).ok());
  EXPECT_EQ(small.Register(kClient, pd, 0, 16, 0, one).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(small.Register(kClient, pd, 0, 2 << 20, 0, one).status().code(),
            absl::StatusCode::kInvalidArgument);  // above max_mr_size
}

// A region backed by three separate host buffers of odd sizes.
TEST_F(MrTableTest, MultiChunkTranslationAndCopies) {
  std::vector<uint8_t> a(100), b(37), c(263);
  const uint64_t len = a.size() + b.size() + c.size();
  const HostChunk chunks[] = {
      {a.data(), a.size()}, {b.data(), b.size()}, {c.data(), c.size()}};
  const uint64_t iova = 0x7000'0000'0000;
  absl::StatusOr<uint32_t> k =
      mrs_.Register(kClient, pd_, iova, len, kAllRights, chunks);
  ASSERT_TRUE(k.ok()) << k.status();
  const MemoryRegion* mr = mrs_.Find(*k);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->num_chunks(), 3u);

  // Range starting 10 bytes before the end of chunk a, crossing all of b and
  // 5 bytes into c.
  std::array<HostSegment, 4> segs;
  uint64_t covered = 0;
  size_t n = mr->Translate(iova + 90, 10 + 37 + 5, segs, &covered);
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(covered, 52u);
  EXPECT_EQ(segs[0].host, a.data() + 90);
  EXPECT_EQ(segs[0].length, 10u);
  EXPECT_EQ(segs[1].host, b.data());
  EXPECT_EQ(segs[1].length, 37u);
  EXPECT_EQ(segs[2].host, c.data());
  EXPECT_EQ(segs[2].length, 5u);
  // Exactly at a chunk boundary: one segment.
  n = mr->Translate(iova + 100, 37, segs, &covered);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(segs[0].host, b.data());
  // The last byte.
  n = mr->Translate(iova + len - 1, 1, segs, &covered);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(segs[0].host, c.data() + c.size() - 1);
  // Output too small: partial, and says how much.
  n = mr->Translate(iova, len, std::span(segs).first(2), &covered);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(covered, 137u);

  // Copy in across all chunks, then read back through the region and the
  // chunks directly.
  std::vector<uint8_t> src(len);
  for (size_t i = 0; i < len; ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_EQ(mr->CopyIn(iova, src), MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(a.data(), src.data(), a.size()));
  EXPECT_EQ(0, std::memcmp(b.data(), src.data() + 100, b.size()));
  EXPECT_EQ(0, std::memcmp(c.data(), src.data() + 137, c.size()));
  std::vector<uint8_t> out(60);
  ASSERT_EQ(mr->CopyOut(iova + 95, out), MrStatus::kOk);
  EXPECT_EQ(0, std::memcmp(out.data(), src.data() + 95, out.size()));

  // An 8-byte atomic operand straddling chunks b and c (offset 136).
  EXPECT_EQ(Remote(*k, iova + 136, 8, access::kRemoteAtomic), MrStatus::kOk);
  ASSERT_EQ(mr->Store64(iova + 136, 0x1122334455667788ull), MrStatus::kOk);
  uint64_t loaded = 0;
  ASSERT_EQ(mr->Load64(iova + 136, &loaded), MrStatus::kOk);
  EXPECT_EQ(loaded, 0x1122334455667788ull);
  uint64_t expect = 0x1122334455667788ull;
  uint8_t raw[8];
  std::memcpy(raw, &expect, 8);
  EXPECT_EQ(b[36], raw[0]);
  EXPECT_EQ(c[0], raw[1]);
}

// --- memory windows (memory_window.cc) ------------------------------------

TEST_F(MrTableTest, Type2WindowServesOnlyItsQpAndIsNeverAnLKey) {
  const uint32_t mr = Reg(0x10000, 4096, kAllRights | access::kMwBind);
  absl::StatusOr<uint32_t> mw = mrs_.AllocMw(kClient, pd_, 2);
  ASSERT_TRUE(mw.ok());
  EXPECT_EQ(Remote(*mw, 0x10000, 8, access::kRemoteRead),
            MrStatus::kInvalidated);  // unbound
  MwBind b{.mw_rkey = *mw,
           .new_rkey = *mw + 1,
           .mr_lkey = mr,
           .addr = 0x10100,
           .length = 256,
           .access = access::kRemoteRead,
           .type = 2};
  ASSERT_EQ(mrs_.BindMw(b, pd_, /*qpn=*/17), MrStatus::kOk);
  const uint32_t key = *mw + 1;
  const MemoryRegion* out = nullptr;
  EXPECT_EQ(
      mrs_.CheckRemote(key, pd_, 17, 0x10100, 256, access::kRemoteRead, &out),
      MrStatus::kOk);
  EXPECT_EQ(out, mrs_.Find(mr));  // the region translates
  EXPECT_EQ(
      mrs_.CheckRemote(key, pd_, 18, 0x10100, 8, access::kRemoteRead, &out),
      MrStatus::kAccessDenied);
  EXPECT_EQ(mrs_.CheckRemote(key, other_pd_, 17, 0x10100, 8,
                             access::kRemoteRead, &out),
            MrStatus::kPdMismatch);
  EXPECT_EQ(
      mrs_.CheckRemote(key, pd_, 17, 0x100F8, 16, access::kRemoteRead, &out),
      MrStatus::kOutOfBounds);
  EXPECT_EQ(mrs_.CheckLocal(key, pd_, 0x10100, 8, access::kNone, &out),
            MrStatus::kInvalidKey);
  // Invalidation from another QP is refused; from its own, it frees it.
  EXPECT_EQ(mrs_.LocalInvalidate(key, pd_, 18), MrStatus::kAccessDenied);
  EXPECT_EQ(mrs_.Invalidate(key, pd_, 18), MrStatus::kAccessDenied);
  EXPECT_EQ(mrs_.Invalidate(key, pd_, 17), MrStatus::kOk);
  EXPECT_EQ(mrs_.LocalInvalidate(key, pd_, 17), MrStatus::kInvalidated);
  EXPECT_EQ(mrs_.Find(mr)->windows_bound(), 0u);
}

TEST_F(MrTableTest, Type1WindowRebindsAndUnbindsWithZeroLength) {
  const uint32_t mr = Reg(0x10000, 4096, kAllRights | access::kMwBind);
  absl::StatusOr<uint32_t> mw = mrs_.AllocMw(kClient, pd_, 1);
  ASSERT_TRUE(mw.ok());
  MwBind b{.mw_rkey = *mw,
           .new_rkey = *mw + 1,
           .mr_lkey = mr,
           .addr = 0x10000,
           .length = 4096,
           .access = access::kRemoteWrite | access::kRemoteRead,
           .type = 1};
  ASSERT_EQ(mrs_.BindMw(b, pd_, 5), MrStatus::kOk);
  // Any QP of the PD may use a type 1 window.
  EXPECT_EQ(Remote(*mw + 1, 0x10000, 64, access::kRemoteWrite), MrStatus::kOk);
  // Re-bound while bound (type 1 may), to a smaller range.
  b.mw_rkey = *mw + 1;
  b.new_rkey = *mw + 2;
  b.length = 128;
  ASSERT_EQ(mrs_.BindMw(b, pd_, 5), MrStatus::kOk);
  EXPECT_EQ(Remote(*mw + 1, 0x10000, 64, access::kRemoteWrite),
            MrStatus::kInvalidKey);
  EXPECT_EQ(Remote(*mw + 2, 0x10000, 256, access::kRemoteWrite),
            MrStatus::kOutOfBounds);
  EXPECT_EQ(mrs_.Find(mr)->windows_bound(), 1u);
  // Type 1 windows are not invalidated by a WR or a peer.
  EXPECT_EQ(mrs_.LocalInvalidate(*mw + 2, pd_, 5), MrStatus::kAccessDenied);
  EXPECT_EQ(mrs_.Invalidate(*mw + 2, pd_, 5), MrStatus::kAccessDenied);
  // A zero-length bind unbinds.
  b.mw_rkey = *mw + 2;
  b.new_rkey = *mw + 3;
  b.length = 0;
  ASSERT_EQ(mrs_.BindMw(b, pd_, 5), MrStatus::kOk);
  EXPECT_EQ(Remote(*mw + 3, 0x10000, 8, access::kRemoteWrite),
            MrStatus::kInvalidated);
  EXPECT_EQ(mrs_.Find(mr)->windows_bound(), 0u);
}

TEST_F(MrTableTest, WindowsHoldTheirPdAndRegion) {
  const uint32_t mr = Reg(0x10000, 4096, kAllRights | access::kMwBind);
  absl::StatusOr<uint32_t> mw = mrs_.AllocMw(kClient, pd_, 2);
  ASSERT_TRUE(mw.ok());
  EXPECT_FALSE(mrs_.AllocMw(kClient, pd_, 3).ok());
  EXPECT_FALSE(mrs_.AllocMw(kClient + 1, pd_, 2).ok());  // not its PD
  EXPECT_FALSE(mrs_.Deregister(kClient, *mw).ok());      // not an MR
  MwBind b{.mw_rkey = *mw,
           .new_rkey = *mw,
           .mr_lkey = mr,
           .addr = 0x10000,
           .length = 64,
           .access = access::kRemoteRead,
           .type = 2};
  ASSERT_EQ(mrs_.BindMw(b, pd_, 1), MrStatus::kOk);
  EXPECT_EQ(mrs_.Deregister(kClient, mr).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(mrs_.Reregister(kClient, mr, rereg::kChangeAccess, pd_, 0, 0,
                            kAllRights, {})
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(pds_.Dealloc(kClient, pd_).ok());  // the MR and the window
  ASSERT_TRUE(mrs_.DeallocMw(kClient, *mw).ok());
  EXPECT_EQ(mrs_.Find(*mw), nullptr);
  ASSERT_TRUE(mrs_.Deregister(kClient, mr).ok());
  EXPECT_TRUE(pds_.Dealloc(kClient, pd_).ok());
}

}  // namespace
}  // namespace rocemu::nic

namespace rocemu::nic {
namespace {

// RDMA ATOMIC WRITE's store: one aligned 8-byte store where the host
// address is aligned too; an iova region that shifts the host address off
// the 8-byte grain, or 8 bytes across two chunks, is kMisaligned (rxe
// checks the host address as well as the iova).
TEST(MemoryRegionTest, AtomicStore64NeedsAnAlignedHostAddress) {
  alignas(8) uint8_t buf[64] = {};
  const uint64_t v = 0x0102030405060708;
  const HostChunk aligned{buf, 32};
  MemoryRegion a(1, 0x1000, 32, access::kRemoteWrite, std::span(&aligned, 1));
  ASSERT_EQ(a.AtomicStore64(0x1008, v), MrStatus::kOk);
  EXPECT_EQ(std::memcmp(buf + 8, &v, 8), 0);
  const HostChunk shifted{buf + 4, 32};
  MemoryRegion s(1, 0x1000, 32, access::kRemoteWrite, std::span(&shifted, 1));
  EXPECT_EQ(s.AtomicStore64(0x1010, v), MrStatus::kMisaligned);
  EXPECT_EQ(std::memcmp(buf + 20, "\0\0\0\0\0\0\0\0", 8), 0);
  const HostChunk split[] = {{buf + 32, 12}, {buf + 44, 16}};
  MemoryRegion c(1, 0x2000, 28, access::kRemoteWrite, split);
  EXPECT_EQ(c.AtomicStore64(0x2008, v), MrStatus::kMisaligned);  // 4 + 4
  ASSERT_EQ(c.AtomicStore64(0x2010, v), MrStatus::kOk);          // second chunk
  EXPECT_EQ(std::memcmp(buf + 48, &v, 8), 0);
}

}  // namespace
}  // namespace rocemu::nic
