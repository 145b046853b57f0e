// Cost of the simulator itself: endpoints that do no work, so what is timed is
// the event queue, the links and (in the incast case) the switch.
#include <benchmark/benchmark.h>

#include <cstring>

#include "tests/simnet/network.h"
#include "tests/simnet/switch.h"

namespace rocemu::simnet {
namespace {

// Sends `count` frames of `len` bytes to `dst` as fast as the port allows;
// writes only the MAC header.
class Source : public nic::FrameEndpoint {
 public:
  Source(MacAddr dst, uint64_t count, uint32_t len)
      : dst_(dst), left_(count), len_(len) {}
  void Receive(uint16_t, std::span<const nic::RxFrame>, nic::TimeNs) override {}
  size_t Transmit(uint16_t, std::span<nic::TxFrame> frames,
                  nic::TimeNs) override {
    size_t n = 0;
    for (; n < frames.size() && left_ > 0; ++n, --left_) {
      std::memcpy(frames[n].data, dst_.data(), 6);
      std::memset(frames[n].data + 6, 0, 8);
      frames[n].len = len_;
    }
    return n;
  }
  nic::TimeNs NextEventTime() const override { return nic::kNever; }

 private:
  MacAddr dst_;
  uint64_t left_;
  uint32_t len_;
};

class Sink : public nic::FrameEndpoint {
 public:
  void Receive(uint16_t, std::span<const nic::RxFrame> frames,
               nic::TimeNs) override {
    received += frames.size();
  }
  size_t Transmit(uint16_t, std::span<nic::TxFrame>, nic::TimeNs) override {
    return 0;
  }
  nic::TimeNs NextEventTime() const override { return nic::kNever; }
  uint64_t received = 0;
};

constexpr MacAddr kSinkMac = {0x02, 0, 0, 0, 0, 0x99};

void BM_PointToPoint(benchmark::State& state) {
  const uint64_t frames = 100'000;
  uint64_t events = 0;
  for (auto _ : state) {
    Network net;
    Source src(kSinkMac, frames, 1024);
    Sink sink;
    LinkConfig cfg;
    cfg.propagation_delay_ns = 2000;
    cfg.loss = state.range(0) ? 0.01 : 0.0;
    (void)net.Connect(net.AddNode(&src, 1), 0, net.AddNode(&sink, 1), 0, cfg);
    net.Run(1'000'000'000);
    if (sink.received == 0) state.SkipWithError("nothing arrived");
    events += net.events_processed();
  }
  state.counters["frames/s"] = benchmark::Counter(
      double(frames) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["events/s"] =
      benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PointToPoint)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_SwitchIncast(benchmark::State& state) {
  const int senders = static_cast<int>(state.range(0));
  const uint64_t per_sender = 50'000;
  uint64_t events = 0;
  for (auto _ : state) {
    Network net;
    Switch sw(SwitchConfig{.num_ports = static_cast<uint16_t>(senders + 1),
                           .queue_capacity_bytes = 1 << 20});
    const NodeId s = net.AddNode(&sw, static_cast<uint16_t>(senders + 1));
    Sink sink;
    LinkConfig cfg;
    cfg.propagation_delay_ns = 1000;
    (void)net.Connect(net.AddNode(&sink, 1), 0, s, 0, cfg);
    (void)sw.AddRoute(kSinkMac, 0);
    std::vector<std::unique_ptr<Source>> sources;
    for (int i = 0; i < senders; ++i) {
      sources.push_back(std::make_unique<Source>(kSinkMac, per_sender, 1024));
      (void)net.Connect(net.AddNode(sources.back().get(), 1), 0, s,
                        static_cast<uint16_t>(i + 1), cfg);
    }
    net.Run(10'000'000'000);
    if (sink.received == 0) state.SkipWithError("nothing arrived");
    events += net.events_processed();
  }
  state.counters["frames/s"] =
      benchmark::Counter(double(per_sender) * senders * state.iterations(),
                         benchmark::Counter::kIsRate);
  state.counters["events/s"] =
      benchmark::Counter(double(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SwitchIncast)->Arg(2)->Arg(8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rocemu::simnet

BENCHMARK_MAIN();
