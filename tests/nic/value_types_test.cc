#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "nic/access.h"
#include "nic/completion.h"
#include "nic/work_request.h"

namespace rocemu::nic {
namespace {

TEST(AccessFlags, RemoteWriteOrAtomicNeedsLocalWrite) {
  EXPECT_TRUE(AccessFlagsConsistent(access::kRemoteRead));
  EXPECT_TRUE(AccessFlagsConsistent(access::kNone));
  EXPECT_FALSE(AccessFlagsConsistent(access::kRemoteWrite));
  EXPECT_FALSE(AccessFlagsConsistent(access::kRemoteAtomic));
  EXPECT_TRUE(
      AccessFlagsConsistent(access::kRemoteWrite | access::kLocalWrite));
  EXPECT_FALSE(AccessFlagsConsistent(1u << 15));  // unknown bit
}

TEST(SgList, CapacityAndTotalLength) {
  SgList l;
  for (uint32_t i = 0; i < kMaxSge; ++i) {
    ASSERT_TRUE(l.PushBack({.addr = i, .length = 0x80000000u, .lkey = 1}));
  }
  EXPECT_FALSE(l.PushBack({}));
  EXPECT_EQ(l.size(), kMaxSge);
  EXPECT_EQ(l.TotalLength(), uint64_t{kMaxSge} * 0x80000000u);
}

// Copies carry exactly the entries and bytes in use (only those are
// copied; the rest of the in-place storage is never read).
TEST(SgList, CopiesCarryTheEntriesInUse) {
  SgList a{{.addr = 1, .length = 2, .lkey = 3},
           {.addr = 4, .length = 5, .lkey = 6}};
  SgList b(a);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1].addr, 4u);
  EXPECT_EQ(b[1].lkey, 6u);
  SgList c{{.addr = 9, .length = 9, .lkey = 9}};
  c = a;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].addr, 1u);
  EXPECT_EQ(c.TotalLength(), 7u);
  SgList& alias = c;
  c = alias;  // self-assignment keeps the list
  EXPECT_EQ(c.size(), 2u);
}

TEST(InlineData, AssignRefusesMoreThanItHolds) {
  InlineData d;
  std::vector<uint8_t> big(kMaxInlineData + 1, 0xAB);
  EXPECT_FALSE(d.Assign(big));
  EXPECT_EQ(d.size(), 0u);
  big.pop_back();
  ASSERT_TRUE(d.Assign(big));
  InlineData e(d);
  ASSERT_EQ(e.size(), kMaxInlineData);
  EXPECT_EQ(e.data()[kMaxInlineData - 1], 0xAB);
  d.set_size(kMaxInlineData + 100);
  EXPECT_EQ(d.size(), kMaxInlineData);
}

TEST(SendWr, PayloadLengthFollowsInlineFlag) {
  SendWr wr;
  wr.sg_list = {{.addr = 0, .length = 100, .lkey = 1},
                {.addr = 0, .length = 28, .lkey = 1}};
  EXPECT_EQ(wr.PayloadLength(), 128u);
  wr.send_flags = send_flags::kInline | send_flags::kSignaled;
  ASSERT_TRUE(wr.inline_data.Assign(std::span<const uint8_t>(
      reinterpret_cast<const uint8_t*>("payload"), 7)));
  EXPECT_EQ(wr.PayloadLength(), 7u);
  EXPECT_TRUE(wr.signaled());
  EXPECT_FALSE(wr.solicited());
}

TEST(WcStatus, NamesMatchIbverbs) {
  EXPECT_EQ(std::string(WcStatusName(WcStatus::kRetryExcErr)),
            "IBV_WC_RETRY_EXC_ERR");
  EXPECT_EQ(std::string(WcStatusString(WcStatus::kWrFlushErr)),
            "Work Request Flushed Error");
  EXPECT_EQ(std::string(WcStatusName(static_cast<WcStatus>(200))),
            "IBV_WC_UNKNOWN");
  EXPECT_EQ(static_cast<int>(WcStatus::kGeneralErr), 21);
  EXPECT_EQ(std::string(WcOpcodeName(WcOpcode::kRecvRdmaWithImm)),
            "IBV_WC_RECV_RDMA_WITH_IMM");
  EXPECT_TRUE(IsRecvOpcode(WcOpcode::kRecv));
  EXPECT_FALSE(IsRecvOpcode(WcOpcode::kFetchAdd));
  EXPECT_EQ(std::string(WrOpcodeName(WrOpcode::kSendWithInv)),
            "IBV_WR_SEND_WITH_INV");
}

}  // namespace
}  // namespace rocemu::nic
