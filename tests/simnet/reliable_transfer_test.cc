// An end-to-end check of the scheduling policy with the pattern the RNIC
// uses: a go-back-N sender driven by a retransmission timer (NextEventTime)
// and by ACKs (Receive), through a lossy, reordering, duplicating link.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "tests/simnet/ether.h"
#include "tests/simnet/network.h"

namespace rocemu::simnet {
namespace {

constexpr uint16_t kEtherType = 0x88B5;  // local experimental

uint64_t ReadSeq(const nic::RxFrame& f) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | f.data[kEthHeaderLen + i];
  return v;
}

size_t WriteFrame(nic::TxFrame& f, uint64_t seq, uint32_t len) {
  std::memset(f.data, 0, len);
  Store16(f.data + 12, kEtherType);
  for (int i = 0; i < 8; ++i) {
    f.data[kEthHeaderLen + i] = static_cast<uint8_t>(seq >> (56 - 8 * i));
  }
  f.len = len;
  return 1;
}

class GbnSender : public nic::FrameEndpoint {
 public:
  GbnSender(uint64_t total, uint64_t window, nic::TimeNs timeout)
      : total_(total), window_(window), timeout_(timeout) {}
  void Receive(uint16_t, std::span<const nic::RxFrame> frames,
               nic::TimeNs now) override {
    for (const nic::RxFrame& f : frames) {
      const uint64_t ack = ReadSeq(f);  // next expected
      if (ack > base_) {
        base_ = ack;
        next_ = std::max(next_, base_);
        timer_ = base_ < total_ ? now + timeout_ : nic::kNever;
      }
    }
  }
  size_t Transmit(uint16_t, std::span<nic::TxFrame> frames,
                  nic::TimeNs now) override {
    if (base_ < total_ && now >= timer_) {
      next_ = base_;  // go back N
      timer_ = now + timeout_;
      ++timeouts;
    }
    if (next_ >= total_ || next_ >= base_ + window_) return 0;
    if (next_ == base_) timer_ = now + timeout_;
    if (next_ < sent_high_) ++retransmitted;
    sent_high_ = std::max(sent_high_, next_ + 1);
    return WriteFrame(frames[0], next_++, 1000);
  }
  nic::TimeNs NextEventTime() const override {
    return base_ < total_ ? timer_ : nic::kNever;
  }
  bool done() const { return base_ == total_; }
  uint64_t timeouts = 0;
  uint64_t retransmitted = 0;

 private:
  uint64_t total_, window_;
  nic::TimeNs timeout_;
  uint64_t base_ = 0, next_ = 0, sent_high_ = 0;
  nic::TimeNs timer_ = nic::kNever;
};

class GbnReceiver : public nic::FrameEndpoint {
 public:
  void Receive(uint16_t, std::span<const nic::RxFrame> frames,
               nic::TimeNs) override {
    for (const nic::RxFrame& f : frames) {
      if (ReadSeq(f) == expected) {
        ++expected;  // delivered in order, exactly once
      } else {
        ++out_of_sequence;
      }
      ack_due_ = true;
    }
  }
  size_t Transmit(uint16_t, std::span<nic::TxFrame> frames,
                  nic::TimeNs) override {
    if (!ack_due_) return 0;
    ack_due_ = false;  // one cumulative ACK covers everything so far
    return WriteFrame(frames[0], expected, 64);
  }
  nic::TimeNs NextEventTime() const override { return nic::kNever; }
  uint64_t expected = 0;
  uint64_t out_of_sequence = 0;

 private:
  bool ack_due_ = false;
};

struct Outcome {
  bool done;
  nic::TimeNs finish;
  uint64_t timeouts;
  uint64_t retransmitted;
  uint64_t out_of_sequence;
  uint64_t delivered;
};

Outcome Transfer(uint64_t seed) {
  constexpr uint64_t kFrames = 3000;
  Network net(NetworkConfig{.seed = seed});
  GbnSender tx(kFrames, 16, 30'000);
  GbnReceiver rx;
  LinkConfig cfg;
  cfg.rate_bps = 25'000'000'000;
  cfg.propagation_delay_ns = 2000;
  cfg.loss = 0.05;
  cfg.reorder = 0.01;
  cfg.duplicate = 0.01;
  (void)net.Connect(net.AddNode(&tx, 1), 0, net.AddNode(&rx, 1), 0, cfg);
  const bool done = net.RunUntil([&] { return tx.done(); }, 1'000'000'000);
  EXPECT_EQ(rx.expected, kFrames);
  return Outcome{
      done,       net.now(), tx.timeouts, tx.retransmitted, rx.out_of_sequence,
      rx.expected};
}

TEST(ReliableTransferTest, GoBackNCompletesThroughImpairedLink) {
  const Outcome a = Transfer(77);
  EXPECT_TRUE(a.done);
  EXPECT_GT(a.timeouts, 0u);
  EXPECT_GT(a.retransmitted, 0u);
  EXPECT_GT(a.out_of_sequence, 0u);
  const Outcome b = Transfer(77);
  EXPECT_EQ(a.finish, b.finish);
  EXPECT_EQ(a.retransmitted, b.retransmitted);
  const Outcome c = Transfer(78);
  EXPECT_TRUE(c.done);
  EXPECT_NE(a.finish, c.finish);
}

}  // namespace
}  // namespace rocemu::simnet
