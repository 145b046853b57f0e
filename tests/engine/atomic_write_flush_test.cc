// RDMA ATOMIC WRITE and RDMA FLUSH (IBTA 1.5) back to back: what goes on the
// wire, what the responder answers (a READ response without payload, as
// Linux rxe answers both), the completions, and every refusal: keys, rights
// of the region and of the QP, alignment, bounds, responder resources and a
// duplicate that must not be executed again.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;
namespace feth = protocol::feth;

constexpr uint64_t kValue = 0x1122334455667788;

SendWr AtomicWriteWr(const Pair& p, uint64_t id, size_t offset,
                     uint64_t value = kValue) {
  SendWr w;
  w.wr_id = id;
  w.opcode = WrOpcode::kAtomicWrite;
  w.send_flags = send_flags::kSignaled;
  w.rdma.remote_addr = Va(p.eb, 0) + offset;
  w.rdma.rkey = p.eb.key;
  w.atomic.swap = value;
  return w;
}

SendWr FlushWr(const Pair& p, uint64_t id, size_t offset, uint32_t len,
               uint8_t type = feth::kGlobal, uint8_t level = feth::kRange) {
  SendWr w;
  w.wr_id = id;
  w.opcode = WrOpcode::kFlush;
  w.send_flags = send_flags::kSignaled;
  w.rdma.remote_addr = Va(p.eb, 0) + offset;
  w.rdma.rkey = p.eb.key;
  w.flush = {len, type, level};
  return w;
}

uint64_t Load(const Endpoint& e, size_t offset) {
  uint64_t v;
  std::memcpy(&v, e.buf.data() + offset, 8);
  return v;
}

ConnectOptions FlushOptions() {
  ConnectOptions o;
  o.qp_access |= access::kFlushGlobal;
  o.mr_access |= access::kFlushGlobal;
  return o;
}

// One request of A's, the completion it ends with and B's QP state after.
struct Outcome {
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  QpState responder_state = QpState::kRts;
};

Outcome RunOne(BackToBack& net, const Pair& p, const SendWr& wr) {
  EXPECT_TRUE(net.a().PostSend(p.ea.qpn, wr).ok());
  net.Run();
  auto sc = Poll(net.a(), p.ea.cq);
  EXPECT_EQ(sc.size(), 1u);
  Outcome o;
  if (!sc.empty()) {
    o.status = sc[0].status;
    o.opcode = sc[0].opcode;
  }
  o.responder_state = net.b().QueryQp(p.eb.qpn)->qp_state;
  return o;
}

TEST(AtomicWriteTest, StoresEightBytesAndIsAnsweredByAnEmptyReadResponse) {
  BackToBack net;
  Pair p = Connect(net);
  const Outcome o = RunOne(net, p, AtomicWriteWr(p, 7, 64));
  EXPECT_EQ(o.status, WcStatus::kSuccess);
  EXPECT_EQ(o.opcode, WcOpcode::kAtomicWrite);
  EXPECT_EQ(Load(p.eb, 64), kValue);
  EXPECT_EQ(Load(p.eb, 56), 0u);  // nothing around it
  EXPECT_EQ(Load(p.eb, 72), 0u);
  auto req = net.Frames(0, Opcode::kRcAtomicWrite);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->parsed.hdr.reth.va, Va(p.eb, 64));
  EXPECT_EQ(req[0]->parsed.hdr.reth.rkey, p.eb.key);
  EXPECT_EQ(req[0]->parsed.hdr.reth.dma_len, 8u);
  ASSERT_EQ(req[0]->parsed.payload.size(), 8u);
  EXPECT_TRUE(req[0]->parsed.hdr.bth.ack_req);
  auto resp = net.Frames(1);
  ASSERT_EQ(resp.size(), 1u);
  EXPECT_EQ(resp[0]->parsed.hdr.bth.opcode, Opcode::kRcRdmaReadResponseOnly);
  EXPECT_EQ(resp[0]->parsed.hdr.bth.psn, req[0]->parsed.hdr.bth.psn);
  EXPECT_TRUE(resp[0]->parsed.payload.empty());
  EXPECT_EQ(net.b().QueryCounters().rx_atomic_write_requests, 1u);
}

TEST(AtomicWriteTest, Refusals) {
  struct Case {
    const char* name;
    ConnectOptions opts;
    size_t offset;
    bool bad_key;
    WcStatus want;
    DropReason why;
  };
  ConnectOptions no_mr_write;
  no_mr_write.mr_access = access::kLocalWrite | access::kRemoteRead |
                          access::kRemoteAtomic;  // atomics, yet no write
  ConnectOptions no_qp_write;
  no_qp_write.qp_access = access::kRemoteRead | access::kRemoteAtomic;
  ConnectOptions no_resources;
  no_resources.max_rd_atomic = 0;
  const Case cases[] = {
      {"bad R_Key",
       {},
       64,
       true,
       WcStatus::kRemAccessErr,
       DropReason::kRkeyInvalid},
      {"MR without REMOTE_WRITE", no_mr_write, 64, false,
       WcStatus::kRemAccessErr, DropReason::kRkeyAccess},
      {"QP without REMOTE_WRITE", no_qp_write, 64, false,
       WcStatus::kRemInvReqErr, DropReason::kQpAccess},
      {"misaligned",
       {},
       68,
       false,
       WcStatus::kRemInvReqErr,
       DropReason::kAtomicMisaligned},
      {"past the MR's end",
       {},
       1 << 16,
       false,
       WcStatus::kRemAccessErr,
       DropReason::kRkeyBounds},
      {"max_dest_rd_atomic 0", no_resources, 64, false, WcStatus::kRemInvReqErr,
       DropReason::kNoRdAtomicResources},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BackToBack net;
    Pair p = Connect(net, c.opts);
    SendWr w = AtomicWriteWr(p, 1, c.offset);
    if (c.bad_key) w.rdma.rkey ^= 0x100;
    const Outcome o = RunOne(net, p, w);
    EXPECT_EQ(o.status, c.want);
    EXPECT_EQ(o.responder_state, QpState::kErr);
    EXPECT_EQ(net.b().reason_counters()[c.why], 1u);
    EXPECT_EQ(Load(p.eb, 64), 0u);
    auto naks = net.Frames(1, Opcode::kRcAcknowledge);
    ASSERT_EQ(naks.size(), 1u);
    EXPECT_EQ(naks[0]->parsed.hdr.aeth.type(), protocol::AethType::kNak);
    EXPECT_EQ(net.b().QueryCounters().rx_atomic_write_requests, 0u);
  }
}

// The response is lost; the requester sends the ATOMIC WRITE again after its
// ACK timeout. Meanwhile the target was changed: the duplicate is answered
// from the responder resource, not stored again over the newer value.
TEST(AtomicWriteTest, DuplicateIsAnsweredNotExecutedAgain) {
  BackToBack net;
  Pair p = Connect(net);
  net.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 0; };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, AtomicWriteWr(p, 1, 64)).ok());
  net.RunUntil(net.clock().Now() + 1000000);  // well before the 67 ms timeout
  ASSERT_EQ(Load(p.eb, 64), kValue);
  const uint64_t later = 42;
  std::memcpy(p.eb.buf.data() + 64, &later, 8);
  net.Run();
  EXPECT_EQ(net.Frames(0, Opcode::kRcAtomicWrite).size(), 2u);
  EXPECT_EQ(Load(p.eb, 64), later);
  auto sc = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  const DeviceCounters b = net.b().QueryCounters();
  EXPECT_EQ(b.duplicate_request, 1u);
  EXPECT_EQ(b.rx_atomic_write_requests, 1u);
}

TEST(FlushTest, FlushAfterWriteCarriesFethAndCompletes) {
  BackToBack net;
  Pair p = Connect(net, FlushOptions());
  SendWr write = WriteWr(p, 1, 2000);
  write.send_flags = 0;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, write).ok());
  const Outcome o = RunOne(net, p, FlushWr(p, 2, 0, 2000));
  EXPECT_EQ(o.status, WcStatus::kSuccess);
  EXPECT_EQ(o.opcode, WcOpcode::kFlush);
  auto req = net.Frames(0, Opcode::kRcFlush);
  ASSERT_EQ(req.size(), 1u);
  EXPECT_EQ(req[0]->parsed.hdr.feth.placement_type, feth::kGlobal);
  EXPECT_EQ(req[0]->parsed.hdr.feth.selectivity_level, feth::kRange);
  EXPECT_EQ(req[0]->parsed.hdr.reth.va, Va(p.eb, 0));
  EXPECT_EQ(req[0]->parsed.hdr.reth.dma_len, 2000u);
  EXPECT_TRUE(req[0]->parsed.payload.empty());
  auto resp = net.Frames(1, Opcode::kRcRdmaReadResponseOnly);
  ASSERT_EQ(resp.size(), 1u);
  EXPECT_EQ(resp[0]->parsed.hdr.bth.psn, req[0]->parsed.hdr.bth.psn);
  EXPECT_TRUE(resp[0]->parsed.payload.empty());
  EXPECT_EQ(net.b().QueryCounters().rx_flush_requests, 1u);
}

TEST(FlushTest, WholeRegionChecksNoRange) {
  BackToBack net;
  Pair p = Connect(net, FlushOptions());
  // Address and length mean nothing at the memory-region level.
  const Outcome o = RunOne(
      net, p,
      FlushWr(p, 1, 1 << 20, 1 << 20, feth::kGlobal, feth::kMemoryRegion));
  EXPECT_EQ(o.status, WcStatus::kSuccess);
  EXPECT_EQ(
      net.Frames(0, Opcode::kRcFlush)[0]->parsed.hdr.feth.selectivity_level,
      feth::kMemoryRegion);
}

TEST(FlushTest, PersistentMemoryCannotBeRegistered) {
  Rnic nic(MakeConfig(1));
  PdHandle pd = *nic.AllocPd();
  std::vector<uint8_t> buf(4096);
  EXPECT_FALSE(nic.RegMr(pd, buf.data(), buf.size(),
                         access::kLocalWrite | access::kFlushPersistent)
                   .ok());
  EXPECT_TRUE(nic.RegMr(pd, buf.data(), buf.size(), access::kFlushGlobal).ok());
}

TEST(FlushTest, Refusals) {
  struct Case {
    const char* name;
    ConnectOptions opts;
    SendWr (*make)(const Pair&);
    WcStatus want;
    DropReason why;  // kNone: refused by the requester, nothing sent
  };
  ConnectOptions no_mr_flush = FlushOptions();
  no_mr_flush.mr_access &= ~access::kFlushGlobal;
  ConnectOptions no_qp_flush = FlushOptions();
  no_qp_flush.qp_access &= ~access::kFlushGlobal;
  ConnectOptions no_resources = FlushOptions();
  no_resources.max_rd_atomic = 0;
  const Case cases[] = {
      {"bad R_Key", FlushOptions(),
       [](const Pair& p) {
         SendWr w = FlushWr(p, 1, 0, 64);
         w.rdma.rkey ^= 0x100;
         return w;
       },
       WcStatus::kRemAccessErr, DropReason::kRkeyInvalid},
      {"MR without FLUSH_GLOBAL", no_mr_flush,
       [](const Pair& p) { return FlushWr(p, 1, 0, 64); },
       WcStatus::kRemAccessErr, DropReason::kRkeyAccess},
      {"persistent placement", FlushOptions(),
       [](const Pair& p) { return FlushWr(p, 1, 0, 64, feth::kPersistent); },
       WcStatus::kRemInvReqErr, DropReason::kQpAccess},
      {"QP without FLUSH_GLOBAL", no_qp_flush,
       [](const Pair& p) { return FlushWr(p, 1, 0, 64); },
       WcStatus::kRemInvReqErr, DropReason::kQpAccess},
      {"range past the MR's end", FlushOptions(),
       [](const Pair& p) { return FlushWr(p, 1, (1 << 16) - 8, 64); },
       WcStatus::kRemAccessErr, DropReason::kRkeyBounds},
      {"max_dest_rd_atomic 0", no_resources,
       [](const Pair& p) { return FlushWr(p, 1, 0, 64); },
       WcStatus::kRemInvReqErr, DropReason::kNoRdAtomicResources},
      {"no placement type", FlushOptions(),
       [](const Pair& p) { return FlushWr(p, 1, 0, 64, 0); },
       WcStatus::kLocQpOpErr, DropReason::kNone},
      {"reserved selectivity level", FlushOptions(),
       [](const Pair& p) { return FlushWr(p, 1, 0, 64, feth::kGlobal, 2); },
       WcStatus::kLocQpOpErr, DropReason::kNone},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    BackToBack net;
    Pair p = Connect(net, c.opts);
    const Outcome o = RunOne(net, p, c.make(p));
    EXPECT_EQ(o.status, c.want);
    if (c.why == DropReason::kNone) {
      EXPECT_TRUE(net.Frames(0).empty());
      continue;
    }
    EXPECT_EQ(o.responder_state, QpState::kErr);
    EXPECT_EQ(net.b().reason_counters()[c.why], 1u);
    EXPECT_EQ(net.b().QueryCounters().rx_flush_requests, 0u);
  }
}

// A FETH the requester would never build (it refuses such a FLUSH
// locally), sent by a peer: NAK invalid request, the QP to ERR.
TEST(FlushTest, ResponderRefusesAnUndefinedFeth) {
  const protocol::Feth bad[] = {
      {.placement_type = 0},
      {.placement_type = 4},
      {.placement_type = feth::kGlobal, .selectivity_level = 2}};
  for (const protocol::Feth& f : bad) {
    SCOPED_TRACE(f.Encode());
    BackToBack net;
    Pair p = Connect(net, FlushOptions());
    // A's own FLUSH never arrives: its first transmission is the template.
    net.drop = [](const WireFrame& w) {
      return w.dir == 0 && w.parsed.hdr.bth.opcode == Opcode::kRcFlush;
    };
    ASSERT_TRUE(net.a().PostSend(p.ea.qpn, FlushWr(p, 1, 0, 64)).ok());
    net.RunUntil(net.clock().Now() + 1000000);
    auto sent = net.Frames(0, Opcode::kRcFlush);
    ASSERT_EQ(sent.size(), 1u);
    protocol::FrameSpec spec = protocol::SpecFromParsed(sent[0]->parsed);
    spec.hdr.feth = f;
    std::vector<uint8_t> frame(
        protocol::RoceFrameLength(spec.net, Opcode::kRcFlush, 0));
    ASSERT_EQ(protocol::BuildRoceFrame(spec, {}, frame), frame.size());
    net.Inject(1, frame);
    EXPECT_EQ(net.b().reason_counters()[DropReason::kFlushInvalid], 1u);
    EXPECT_EQ(net.b().QueryQp(p.eb.qpn)->qp_state, QpState::kErr);
    net.Run();
    auto sc = Poll(net.a(), p.ea.cq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::kRemInvReqErr);
    EXPECT_EQ(net.b().QueryCounters().rx_flush_requests, 0u);
  }
}

// A lost FLUSH response: the retried FLUSH is answered from the responder
// resource.
TEST(FlushTest, DuplicateIsAnsweredAgain) {
  BackToBack net;
  Pair p = Connect(net, FlushOptions());
  net.drop = [](const WireFrame& f) { return f.dir == 1 && f.index == 0; };
  const Outcome o = RunOne(net, p, FlushWr(p, 1, 0, 64));
  EXPECT_EQ(o.status, WcStatus::kSuccess);
  EXPECT_EQ(net.Frames(0, Opcode::kRcFlush).size(), 2u);
  EXPECT_EQ(net.Frames(1, Opcode::kRcRdmaReadResponseOnly).size(), 2u);
  const DeviceCounters b = net.b().QueryCounters();
  EXPECT_EQ(b.duplicate_request, 1u);
  EXPECT_EQ(b.rx_flush_requests, 1u);
}

}  // namespace
}  // namespace rocemu::nic::testing
