// The transmit scheduler's request runs (RnicConfig::tx_quantum): ready QPs
// take turns, each sending up to tx_quantum request packets in a row, and
// the responder answers a run with one coalesced ACK. Two RC QPs with
// single-packet WRITEs queued up front, over the back-to-back carrier
// (8 frames a transmit call, each frame delivered on its own).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/engine/back_to_back.h"

namespace rocemu::nic::testing {
namespace {

using protocol::Opcode;

constexpr uint32_t kWrites = 20;  // per QP
constexpr uint32_t kLen = 64;

struct Outcome {
  std::vector<uint32_t> dest_qps;  // BTH.DestQP of each request, in order
  size_t acks = 0;
};

Outcome RunTwoQps(uint32_t quantum) {
  RnicConfig ca = MakeConfig(1);
  RnicConfig cb = MakeConfig(2);
  ca.tx_quantum = cb.tx_quantum = quantum;
  BackToBack net(ca, cb);
  Pair p[2] = {Connect(net), Connect(net)};
  for (Pair& q : p) {
    for (uint32_t i = 0; i < kWrites; ++i) {
      Fill(q.ea.buf, i * kLen, kLen, static_cast<uint8_t>(q.ea.qpn + i));
      SendWr wr;
      wr.wr_id = i;
      wr.opcode = WrOpcode::kRdmaWrite;
      wr.send_flags = send_flags::kSignaled;
      wr.sg_list = {SgeOf(q.ea, i * kLen, kLen)};
      wr.rdma.remote_addr = Va(q.eb, i * kLen);
      wr.rdma.rkey = q.eb.key;
      EXPECT_TRUE(net.a().PostSend(q.ea.qpn, wr).ok());
    }
  }
  net.Run();
  Outcome o;
  for (const WireFrame* f : net.Frames(0)) {
    o.dest_qps.push_back(f->parsed.hdr.bth.dest_qp);
  }
  o.acks = net.Frames(1, Opcode::kRcAcknowledge).size();
  EXPECT_EQ(o.acks, net.Frames(1).size());  // nothing but ACKs back
  // Every WRITE landed and completed, in order, on each QP.
  for (Pair& q : p) {
    EXPECT_EQ(0, std::memcmp(q.eb.buf.data(), q.ea.buf.data(), kWrites * kLen));
    auto wc = Poll(net.a(), q.ea.cq);
    EXPECT_EQ(wc.size(), kWrites);
    for (size_t i = 0; i < wc.size(); ++i) {
      EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
      EXPECT_EQ(wc[i].wr_id, i);
    }
  }
  return o;
}

// The lengths of the runs of one destination QP in `qps`.
std::vector<size_t> Runs(const std::vector<uint32_t>& qps) {
  std::vector<size_t> runs;
  for (size_t i = 0; i < qps.size(); ++i) {
    if (i == 0 || qps[i] != qps[i - 1]) runs.push_back(0);
    ++runs.back();
  }
  return runs;
}

TEST(TxQuantumTest, QpsTakeTurnsInRunsOfTheQuantum) {
  const Outcome o = RunTwoQps(3);
  ASSERT_EQ(o.dest_qps.size(), 2 * kWrites);
  const std::vector<size_t> runs = Runs(o.dest_qps);
  // No run is longer than the quantum, and the first transmit call (8
  // frames) is cut 3 + 3 + 2: the run in progress ends with the call.
  size_t total = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    EXPECT_LE(runs[i], 3u) << "run " << i;
    total += runs[i];
  }
  EXPECT_EQ(total, 2 * kWrites);
  EXPECT_EQ(runs[0], 3u);
  EXPECT_EQ(runs[1], 3u);
  EXPECT_EQ(runs[2], 2u);
}

TEST(TxQuantumTest, QuantumOneInterleavesPacketByPacket) {
  const Outcome o = RunTwoQps(1);
  ASSERT_EQ(o.dest_qps.size(), 2 * kWrites);
  for (size_t run : Runs(o.dest_qps)) EXPECT_EQ(run, 1u);
}

TEST(TxQuantumTest, RunsOfOneQpDrawFewerAcks) {
  // Each 8-frame burst reaches the responder before it transmits, and
  // it ACKs once per QP in the burst. Packet by packet, every burst holds
  // both QPs: 5 bursts, 10 ACKs. In runs of 8, the first four bursts hold
  // one QP each and the last the remaining 4 + 4: 6 ACKs.
  const Outcome one = RunTwoQps(1);
  const Outcome eight = RunTwoQps(8);
  EXPECT_EQ(one.acks, 10u);
  EXPECT_EQ(eight.acks, 6u);
  EXPECT_EQ(Runs(eight.dest_qps), (std::vector<size_t>{8, 8, 8, 8, 4, 4}));
}

}  // namespace
}  // namespace rocemu::nic::testing
