// Memory windows through the engines: a window bound by a work request on
// B's send queue grants A remote access to exactly its range and rights,
// for exactly as long as it is bound; binds and invalidations complete in
// send-queue order; a bind that breaks a rule completes with
// IBV_WC_MW_BIND_ERR and takes the QP to ERR.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

constexpr AccessFlags kRegionRights = access::kLocalWrite |
                                      access::kRemoteWrite |
                                      access::kRemoteRead | access::kMwBind;

class MemoryWindowTest : public ::testing::Test {
 protected:
  MemoryWindowTest() : p_(Connect(net_, Options())) {
    absl::StatusOr<uint32_t> mw =
        net_.b().mr_table().AllocMw(kKernelClient, p_.eb.pd, 2);
    EXPECT_TRUE(mw.ok()) << mw.status();
    mw_ = mw.value_or(0);
  }
  static ConnectOptions Options() {
    ConnectOptions o;
    o.mr_access = kRegionRights;
    return o;
  }
  // A bind of B's window to [offset, offset + len) of B's buffer.
  SendWr Bind(uint64_t wr_id, uint64_t offset, uint64_t len, AccessFlags rights,
              uint8_t type = 2) const {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = send_flags::kSignaled;
    wr.bind.mw_rkey = mw_;
    wr.bind.new_rkey = (mw_ & ~0xFFu) | ((mw_ + 1) & 0xFF);
    wr.bind.mr_lkey = p_.eb.key;
    wr.bind.addr = Va(p_.eb, offset);
    wr.bind.length = len;
    wr.bind.access = rights;
    wr.bind.type = type;
    return wr;
  }
  SendWr Write(uint64_t wr_id, uint32_t len, uint64_t remote,
               uint32_t rkey) const {
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = send_flags::kSignaled;
    wr.sg_list = {SgeOf(p_.ea, 0, len)};
    wr.rdma.remote_addr = remote;
    wr.rdma.rkey = rkey;
    return wr;
  }
  // Binds on B and returns the window's new key.
  uint32_t BindOk(uint64_t offset, uint64_t len, AccessFlags rights) {
    const SendWr wr = Bind(50, offset, len, rights);
    EXPECT_TRUE(net_.b().PostSend(p_.eb.qpn, wr).ok());
    net_.Run();
    auto wc = Poll(net_.b(), p_.eb.cq);
    EXPECT_EQ(wc.size(), 1u);
    if (wc.size() == 1) {
      EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
      EXPECT_EQ(wc[0].opcode, WcOpcode::kBindMw);
      EXPECT_EQ(wc[0].wr_id, 50u);
    }
    mw_ = wr.bind.new_rkey;
    return mw_;
  }
  WcStatus WriteStatus(uint32_t len, uint64_t remote, uint32_t rkey) {
    EXPECT_TRUE(net_.a().PostSend(p_.ea.qpn, Write(7, len, remote, rkey)).ok());
    net_.Run();
    auto wc = Poll(net_.a(), p_.ea.cq);
    EXPECT_EQ(wc.size(), 1u);
    return wc.empty() ? WcStatus::kGeneralErr : wc[0].status;
  }

  BackToBack net_;
  Pair p_;
  uint32_t mw_ = 0;
};

TEST_F(MemoryWindowTest, WriteThroughABoundWindowLandsInTheRegion) {
  const uint32_t key = BindOk(4096, 8192, access::kRemoteWrite);
  EXPECT_NE(key, p_.eb.key);
  const MemoryRegion* w = net_.b().mr_table().Find(key);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->mw_type(), 2);
  EXPECT_EQ(w->bound_qpn(), p_.eb.qpn);
  EXPECT_EQ(net_.b().mr_table().Find(p_.eb.key)->windows_bound(), 1u);

  Fill(p_.ea.buf, 0, 3000, 9);
  EXPECT_EQ(WriteStatus(3000, Va(p_.eb, 5000), key), WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(p_.eb.buf.data() + 5000, p_.ea.buf.data(), 3000));
}

TEST_F(MemoryWindowTest, AccessOutsideTheWindowIsARemoteAccessError) {
  const uint32_t key = BindOk(4096, 8192, access::kRemoteWrite);
  // Inside the region, past the window's end.
  EXPECT_EQ(WriteStatus(100, Va(p_.eb, 4096 + 8192 - 50), key),
            WcStatus::kRemAccessErr);
  EXPECT_EQ(net_.b().QueryQp(p_.eb.qpn)->qp_state, QpState::kErr);
}

TEST_F(MemoryWindowTest, TheWindowGrantsOnlyItsOwnRights) {
  // The region allows remote write; the window only remote read.
  const uint32_t key = BindOk(0, 8192, access::kRemoteRead);
  EXPECT_EQ(WriteStatus(64, Va(p_.eb, 0), key), WcStatus::kRemAccessErr);
}

TEST_F(MemoryWindowTest, TheOldKeyDiesWithTheBind) {
  const uint32_t old_key = mw_;
  const uint32_t key = BindOk(0, 8192, access::kRemoteWrite);
  ASSERT_NE(key, old_key);
  EXPECT_EQ(WriteStatus(64, Va(p_.eb, 0), old_key), WcStatus::kRemAccessErr);
}

TEST_F(MemoryWindowTest, LocalInvalidateEndsAccess) {
  const uint32_t key = BindOk(0, 8192, access::kRemoteWrite);
  SendWr inv;
  inv.wr_id = 60;
  inv.opcode = WrOpcode::kLocalInv;
  inv.send_flags = send_flags::kSignaled;
  inv.invalidate_rkey = key;
  ASSERT_TRUE(net_.b().PostSend(p_.eb.qpn, inv).ok());
  net_.Run();
  auto wc = Poll(net_.b(), p_.eb.cq);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kLocalInv);
  EXPECT_FALSE(net_.b().mr_table().Find(key)->valid());
  EXPECT_EQ(net_.b().mr_table().Find(p_.eb.key)->windows_bound(), 0u);
  EXPECT_EQ(WriteStatus(64, Va(p_.eb, 0), key), WcStatus::kRemAccessErr);
}

TEST_F(MemoryWindowTest, SendWithInvalidateUnbindsTheWindow) {
  const uint32_t key = BindOk(0, 8192, access::kRemoteWrite);
  ASSERT_TRUE(
      net_.b().PostRecv(p_.eb.qpn, {3, {SgeOf(p_.eb, 60000, 256)}}).ok());
  SendWr send;
  send.wr_id = 8;
  send.opcode = WrOpcode::kSendWithInv;
  send.send_flags = send_flags::kSignaled;
  send.sg_list = {SgeOf(p_.ea, 0, 100)};
  send.invalidate_rkey = key;
  ASSERT_TRUE(net_.a().PostSend(p_.ea.qpn, send).ok());
  net_.Run();
  auto rc = Poll(net_.b(), p_.eb.cq);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(rc[0].wc_flags & wc_flags::kWithInv);
  EXPECT_EQ(rc[0].invalidated_rkey, key);
  ASSERT_EQ(Poll(net_.a(), p_.ea.cq).size(), 1u);
  EXPECT_FALSE(net_.b().mr_table().Find(key)->valid());
  EXPECT_EQ(WriteStatus(64, Va(p_.eb, 0), key), WcStatus::kRemAccessErr);
}

TEST_F(MemoryWindowTest, ABoundType2WindowIsNotBoundAgain) {
  BindOk(0, 4096, access::kRemoteWrite);
  ASSERT_TRUE(net_.b()
                  .PostSend(p_.eb.qpn, Bind(51, 0, 4096, access::kRemoteWrite))
                  .ok());
  net_.Run();
  auto wc = Poll(net_.b(), p_.eb.cq);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 51u);
  EXPECT_EQ(wc[0].status, WcStatus::kMwBindErr);
  EXPECT_EQ(net_.b().QueryQp(p_.eb.qpn)->qp_state, QpState::kErr);
}

TEST_F(MemoryWindowTest, BindErrorsCompleteWithMwBindErr) {
  struct Case {
    const char* what;
    SendWr wr;
  };
  std::vector<Case> cases;
  cases.push_back({"past the region", Bind(1, 60000, 8192, 0)});
  cases.push_back({"type mismatch", Bind(1, 0, 64, 0, /*type=*/1)});
  SendWr other_index = Bind(1, 0, 64, 0);
  other_index.bind.new_rkey += 0x100;
  cases.push_back({"new key of another index", other_index});
  SendWr no_mr = Bind(1, 0, 64, 0);
  no_mr.bind.mr_lkey ^= 0x5500;
  cases.push_back({"unknown region", no_mr});
  SendWr mw_bind_right = Bind(1, 0, 64, access::kMwBind);
  cases.push_back({"a right windows cannot grant", mw_bind_right});
  for (Case& c : cases) {
    BackToBack net;
    Pair p = Connect(net, Options());
    absl::StatusOr<uint32_t> mw =
        net.b().mr_table().AllocMw(kKernelClient, p.eb.pd, 2);
    ASSERT_TRUE(mw.ok());
    const uint32_t delta = c.wr.bind.new_rkey - mw_;
    c.wr.bind.mw_rkey = *mw;
    c.wr.bind.new_rkey = *mw + delta;
    c.wr.bind.mr_lkey = p.eb.key ^ (c.wr.bind.mr_lkey ^ p_.eb.key);
    c.wr.bind.addr = c.wr.bind.addr - Va(p_.eb, 0) + Va(p.eb, 0);
    ASSERT_TRUE(net.b().PostSend(p.eb.qpn, c.wr).ok()) << c.what;
    net.Run();
    auto wc = Poll(net.b(), p.eb.cq);
    ASSERT_EQ(wc.size(), 1u) << c.what;
    EXPECT_EQ(wc[0].status, WcStatus::kMwBindErr) << c.what;
    EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kErr) << c.what;
  }
}

TEST_F(MemoryWindowTest, ARegionWithoutMwBindCannotBeBound) {
  std::vector<uint8_t> mem(4096);
  absl::StatusOr<uint32_t> plain =
      net_.b().RegMr(p_.eb.pd, mem.data(), mem.size(),
                     access::kLocalWrite | access::kRemoteWrite);
  ASSERT_TRUE(plain.ok());
  SendWr wr = Bind(5, 0, 64, access::kRemoteWrite);
  wr.bind.mr_lkey = *plain;
  wr.bind.addr = reinterpret_cast<uint64_t>(mem.data());
  ASSERT_TRUE(net_.b().PostSend(p_.eb.qpn, wr).ok());
  net_.Run();
  auto wc = Poll(net_.b(), p_.eb.cq);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kMwBindErr);
}

TEST_F(MemoryWindowTest, BindCompletesAfterTheRequestsBeforeIt) {
  // A's own window: a WRITE to B, then a bind on A, both signaled. The
  // bind waits for the WRITE's ACK, so the completions come in order.
  absl::StatusOr<uint32_t> mw =
      net_.a().mr_table().AllocMw(kKernelClient, p_.ea.pd, 2);
  ASSERT_TRUE(mw.ok());
  ASSERT_TRUE(net_.a()
                  .PostSend(p_.ea.qpn, Write(1, 3000, Va(p_.eb, 0), p_.eb.key))
                  .ok());
  SendWr bind;
  bind.wr_id = 2;
  bind.opcode = WrOpcode::kBindMw;
  bind.send_flags = send_flags::kSignaled;
  bind.bind = {.mw_rkey = *mw,
               .new_rkey = *mw + 1,
               .mr_lkey = p_.ea.key,
               .access = access::kRemoteRead,
               .addr = Va(p_.ea, 0),
               .length = 64,
               .type = 2};
  ASSERT_TRUE(net_.a().PostSend(p_.ea.qpn, bind).ok());
  // While the WRITE's ACK is lost the bind does not run.
  net_.drop = [](const WireFrame& f) { return f.dir == 1; };
  net_.RunUntil(net_.clock().Now() + 1000);
  EXPECT_EQ(net_.Frames(0).size(), 3u);  // the WRITE, nothing for the bind
  EXPECT_TRUE(Poll(net_.a(), p_.ea.cq).empty());
  EXPECT_FALSE(net_.a().mr_table().Find(*mw)->valid());
  net_.drop = nullptr;
  net_.Run();  // retransmission, ACK, then the bind
  auto wc = Poll(net_.a(), p_.ea.cq);
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kBindMw);
  EXPECT_TRUE(net_.a().mr_table().Find(*mw + 1)->valid());
}

TEST_F(MemoryWindowTest, ARegionWithABoundWindowIsNotDeregistered) {
  const uint32_t key = BindOk(0, 4096, access::kRemoteWrite);
  EXPECT_EQ(net_.b().DeregMr(p_.eb.key).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(net_.b().mr_table().DeallocMw(kKernelClient, key).ok());
  EXPECT_EQ(net_.b().mr_table().Find(p_.eb.key)->windows_bound(), 0u);
  EXPECT_TRUE(net_.b().DeregMr(p_.eb.key).ok());
}

}  // namespace
}  // namespace rocemu::nic::testing
