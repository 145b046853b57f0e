// The MSN of responses the responder serves again for a duplicate READ or
// atomic: a replay is the original response sent again, so its AETH carries
// the MSN the original had (messages completed by its PSN), even when later
// messages completed in between.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

// The MSNs of the ACKs B sent, in wire order.
std::vector<uint32_t> AckMsns(const BackToBack& net) {
  std::vector<uint32_t> out;
  for (const WireFrame* f : net.Frames(1, Opcode::kRcAcknowledge)) {
    out.push_back(f->parsed.hdr.aeth.msn);
  }
  return out;
}

TEST(MsnReplayTest, DuplicateAtomicCarriesTheOriginalMsn) {
  BackToBack net;
  Pair p = Connect(net);
  const uint64_t v = 10;
  std::memcpy(p.eb.buf.data() + 64, &v, 8);
  const SendWr fa = FetchAddWr(p, 1, 64, 1);
  // Lose the first ATOMIC_ACKNOWLEDGE; the WRITE behind the atomic completes
  // a second message, and its ACK makes the requester resend the atomic.
  net.drop = [](const WireFrame& f) {
    return f.dir == 1 &&
           f.parsed.hdr.bth.opcode == Opcode::kRcAtomicAcknowledge &&
           f.index == 0;
  };
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, fa).ok());
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 2, 256, 1024)).ok());
  net.Run();

  const auto acks = net.Frames(1, Opcode::kRcAtomicAcknowledge);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_TRUE(acks[0]->dropped);
  EXPECT_FALSE(acks[1]->dropped);
  EXPECT_EQ(acks[1]->parsed.hdr.bth.psn, acks[0]->parsed.hdr.bth.psn);
  EXPECT_EQ(acks[1]->parsed.hdr.atomic_ack.orig, v);
  // The replay was served after the WRITE completed (MSN one higher) ...
  const std::vector<uint32_t> ack_msns = AckMsns(net);
  ASSERT_FALSE(ack_msns.empty());
  EXPECT_EQ(ack_msns.front(), acks[0]->parsed.hdr.aeth.msn + 1);
  EXPECT_GT(acks[1]->index, net.Frames(1, Opcode::kRcAcknowledge)[0]->index);
  // ... yet carries the MSN of the original response.
  EXPECT_EQ(acks[1]->parsed.hdr.aeth.msn, acks[0]->parsed.hdr.aeth.msn);

  EXPECT_EQ(net.b().QueryCounters().duplicate_request, 2u);  // atomic, WRITE
  uint64_t after = 0;
  std::memcpy(&after, p.eb.buf.data() + 64, 8);
  EXPECT_EQ(after, v + 1);  // executed once
  const auto wcs = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wcs.size(), 2u);
  for (const WorkCompletion& wc : wcs) EXPECT_EQ(wc.status, WcStatus::kSuccess);
}

TEST(MsnReplayTest, DuplicateReadResponsesCarryTheOriginalMsn) {
  BackToBack net;
  Pair p = Connect(net);  // path MTU 1024
  Fill(p.eb.buf, 0, 3000, 4);
  // Lose READ_RESPONSE_LAST; the WRITE behind the READ completes a second
  // message, and its ACK makes the requester resend the READ from the
  // missing PSN.
  net.drop = [](const WireFrame& f) {
    return f.dir == 1 &&
           f.parsed.hdr.bth.opcode == Opcode::kRcRdmaReadResponseLast &&
           f.index == 2;
  };
  SendWr rd = WriteWr(p, 1, 3000, 0);
  rd.opcode = WrOpcode::kRdmaRead;
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, rd).ok());
  ASSERT_TRUE(net.a().PostSend(p.ea.qpn, WriteWr(p, 2, 256, 8192)).ok());
  net.Run();

  const auto first = net.Frames(1, Opcode::kRcRdmaReadResponseFirst);
  const auto last = net.Frames(1, Opcode::kRcRdmaReadResponseLast);
  const auto only = net.Frames(1, Opcode::kRcRdmaReadResponseOnly);
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(last.size(), 1u);
  ASSERT_EQ(only.size(), 1u);  // the re-executed tail: one packet
  EXPECT_TRUE(last[0]->dropped);
  EXPECT_EQ(only[0]->parsed.hdr.bth.psn, last[0]->parsed.hdr.bth.psn);
  const uint32_t original = first[0]->parsed.hdr.aeth.msn;
  EXPECT_EQ(last[0]->parsed.hdr.aeth.msn, original);
  const std::vector<uint32_t> ack_msns = AckMsns(net);
  ASSERT_FALSE(ack_msns.empty());
  EXPECT_EQ(ack_msns.front(), original + 1);  // the WRITE completed first
  EXPECT_EQ(only[0]->parsed.hdr.aeth.msn, original);

  EXPECT_EQ(0, std::memcmp(p.ea.buf.data(), p.eb.buf.data(), 3000));
  const auto wcs = Poll(net.a(), p.ea.cq);
  ASSERT_EQ(wcs.size(), 2u);
  for (const WorkCompletion& wc : wcs) EXPECT_EQ(wc.status, WcStatus::kSuccess);
}

}  // namespace
}  // namespace rocemu::nic::testing
