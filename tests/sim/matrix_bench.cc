// Issue 3's RNIC benchmarks in the simulator (not tests): frames per second
// through requester + responder + completer of two Rnics on one core, and
// the memory of an idle QP. The ceiling for the first is simnet_bench (the
// simulator alone, same link model).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "protocol/frame.h"
#include "protocol/opcode.h"
#include "tests/bench/resident.h"
#include "tests/sim/matrix_pair.h"

namespace rocemu::sim {
namespace {

// The pair the benchmarks below stream over (100 Gb/s, 1 us link when
// simulated); nullptr (and the benchmark marked failed) if it cannot be set up.
std::unique_ptr<MatrixPair> BenchPair(benchmark::State& state, uint32_t qps = 1,
                                      bool recorder = true) {
  PairOptions po;
  po.extra_qps = qps - 1;
  if (!recorder) po.flight_recorder_events = 0;
  po.mtu = nic::PathMtu::kMtu4096;
  po.link.rate_bps = 100'000'000'000;
  po.link.propagation_delay_ns = 1000;
  po.buf_size = 1 << 20;
  auto pair = MatrixPair::Create(po);
  if (!pair.ok()) {
    state.SkipWithError("pair");
    return nullptr;
  }
  return std::move(*pair);
}

// Streams `len`-byte WRITEs (or SENDs) A -> B, `window` outstanding, and
// reports frames (both directions) per second of the benchmark's CPU time.
void Stream(benchmark::State& state, nic::WrOpcode op, uint32_t len) {
  std::unique_ptr<MatrixPair> pair = BenchPair(state);
  if (pair == nullptr) return;
  MatrixPair& p = *pair;
  constexpr uint32_t kWindow = 64;
  constexpr uint32_t kBatch = 4096;
  uint64_t next_id = 0;
  nic::WorkCompletion wc[64];
  auto post = [&] {
    nic::SendWr wr;
    wr.wr_id = next_id++;
    wr.opcode = op;
    wr.send_flags = nic::send_flags::kSignaled;
    const uint64_t off = (wr.wr_id % kWindow) * 8192;
    wr.sg_list = {nic::Sge{p.a().Va(off), len, p.a().key}};
    wr.rdma.remote_addr = p.b().Va(off);
    wr.rdma.rkey = p.b().key;
    if (op == nic::WrOpcode::kSend) {
      nic::RecvWr r;
      r.wr_id = wr.wr_id;
      r.sg_list = {nic::Sge{p.b().Va(off), 8192, p.b().key}};
      (void)p.b().nic.PostRecv(p.b().qpn(), r);
    }
    (void)p.a().nic.PostSend(p.a().qpn(), wr);
  };
  uint64_t frames = 0;
  for (auto _ : state) {
    uint64_t posted = 0, done = 0;
    while (done < kBatch) {
      while (posted < kBatch && posted - done < kWindow) {
        post();
        ++posted;
      }
      p.net().Kick(p.a().node);
      p.net().RunUntil(
          [&] {
            size_t n;
            while ((n = p.b().nic.PollCq(p.b().cq, wc)) > 0) {
            }
            bool any = false;
            while ((n = p.a().nic.PollCq(p.a().cq, wc)) > 0) {
              done += n;
              any = true;
            }
            return any;
          },
          p.net().now() + 1'000'000'000);
    }
  }
  const auto& ab = p.net().counters(p.link(), simnet::Dir::kAtoB);
  const auto& ba = p.net().counters(p.link(), simnet::Dir::kBtoA);
  frames = ab.tx_frames + ba.tx_frames;
  state.counters["frames_per_s"] = benchmark::Counter(
      static_cast<double>(frames), benchmark::Counter::kIsRate);
  state.counters["msgs_per_s"] = benchmark::Counter(
      static_cast<double>(next_id), benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(next_id) * len);
}

void BM_Write4KiB(benchmark::State& s) {
  Stream(s, nic::WrOpcode::kRdmaWrite, 4096);
}
void BM_Send64B(benchmark::State& s) { Stream(s, nic::WrOpcode::kSend, 64); }
BENCHMARK(BM_Write4KiB)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Send64B)->Unit(benchmark::kMillisecond);

// The engines alone: the same two RNICs as above with A's frames handed
// straight to B and back in bursts of 32 (no simulator, no event heap), so
// the time is requester + responder + completer + codec + the CQ and queue
// work around them. One signaled 64 B WRITE or SEND per message, 64 in
// flight per QP, posted round-robin over `qps` QPs (the RNIC's scheduler
// then picks among them per frame, as with perftest's -q). Reports engine ns
// per frame and per message; BM_Codec* below give the codec's own share of
// the same frames for scripts/bench_engine.sh. `recorder`: the QPs' flight
// recorders on (the default) or off, for their cost per frame (issue 36).
void Engine(benchmark::State& state, nic::WrOpcode op, uint32_t qps = 1,
            bool recorder = true) {
  std::unique_ptr<MatrixPair> pair = BenchPair(state, qps, recorder);
  if (pair == nullptr) return;
  MatrixPair& p = *pair;
  const uint32_t kWindow = 64 * qps;
  constexpr size_t kBurst = 32;
  constexpr uint32_t kLen = 64;
  struct Wire {
    std::vector<std::vector<uint8_t>> bufs;
    std::array<nic::TxFrame, kBurst> tx;
    std::array<nic::RxFrame, kBurst> rx;
    Wire() : bufs(kBurst, std::vector<uint8_t>(9216)) {}
    // One burst from `from` to `to`; returns the frames moved.
    size_t Move(nic::Rnic& from, nic::Rnic& to, nic::TimeNs now) {
      for (size_t i = 0; i < kBurst; ++i) {
        tx[i] = nic::TxFrame{bufs[i].data(), 9216, 0, 0};
      }
      const size_t n = from.Transmit(0, tx, now);
      for (size_t i = 0; i < n; ++i)
        rx[i] = nic::RxFrame{tx[i].data, tx[i].len};
      if (n > 0) to.Receive(0, std::span(rx.data(), n), now);
      return n;
    }
  };
  Wire ab, ba;
  nic::WorkCompletion wc[64];
  nic::TimeNs now = 1'000'000;
  uint64_t posted = 0, done = 0, frames = 0, acks = 0;
  nic::SendWr wr;
  wr.opcode = op;
  wr.send_flags = nic::send_flags::kSignaled;
  wr.rdma.rkey = p.b().key;
  nic::RecvWr r;
  for (auto _ : state) {
    const uint64_t target = done + 4096;
    while (done < target) {
      while (posted - done < kWindow) {
        const uint64_t off = (posted % 64) * 8192;
        const size_t q = posted % qps;
        wr.wr_id = posted++;
        wr.sg_list = {nic::Sge{p.a().Va(off), kLen, p.a().key}};
        wr.rdma.remote_addr = p.b().Va(off);
        if (op == nic::WrOpcode::kSend) {
          r.wr_id = wr.wr_id;
          r.sg_list = {nic::Sge{p.b().Va(off), 8192, p.b().key}};
          (void)p.b().nic.PostRecv(p.b().qpns[q], r);
        }
        (void)p.a().nic.PostSend(p.a().qpns[q], wr);
      }
      frames += ab.Move(p.a().nic, p.b().nic, now);
      const size_t back = ba.Move(p.b().nic, p.a().nic, now);
      frames += back;
      acks += back;
      while (p.b().nic.PollCq(p.b().cq, wc) > 0) {
      }
      size_t n;
      while ((n = p.a().nic.PollCq(p.a().cq, wc)) > 0) {
        for (size_t i = 0; i < n; ++i) {
          if (wc[i].status != nic::WcStatus::kSuccess) {
            state.SkipWithError("completion error");
            return;
          }
        }
        done += n;
      }
      now += 100;
    }
  }
  state.counters["frames_per_s"] = benchmark::Counter(
      static_cast<double>(frames), benchmark::Counter::kIsRate);
  state.counters["msgs_per_s"] = benchmark::Counter(
      static_cast<double>(done), benchmark::Counter::kIsRate);
  state.counters["ns_per_frame"] = benchmark::Counter(
      static_cast<double>(frames) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns_per_msg"] = benchmark::Counter(
      static_cast<double>(done) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["acks_per_msg"] =
      static_cast<double>(acks) / static_cast<double>(done);
}
void BM_EngineSend64B(benchmark::State& s) { Engine(s, nic::WrOpcode::kSend); }
void BM_EngineWrite64B(benchmark::State& s) {
  Engine(s, nic::WrOpcode::kRdmaWrite);
}
// 16 QPs, as the message-rate goal (perftest -q 16).
void BM_EngineWrite64B16Qp(benchmark::State& s) {
  Engine(s, nic::WrOpcode::kRdmaWrite, 16);
}
// The same without flight recorders: what recording costs per frame.
void BM_EngineSend64BNoRecorder(benchmark::State& s) {
  Engine(s, nic::WrOpcode::kSend, 1, false);
}
void BM_EngineWrite64BNoRecorder(benchmark::State& s) {
  Engine(s, nic::WrOpcode::kRdmaWrite, 1, false);
}
BENCHMARK(BM_EngineSend64B);
BENCHMARK(BM_EngineSend64BNoRecorder);
BENCHMARK(BM_EngineWrite64B);
BENCHMARK(BM_EngineWrite64BNoRecorder);
BENCHMARK(BM_EngineWrite64B16Qp);

// The codec's share of those frames, same run: build (headers, payload
// copy, IPv4 checksum, ICRC) and parse with every check of one RC frame of
// the given opcode and payload, as the engines do once each per frame.
void Codec(benchmark::State& state, uint8_t opcode, size_t len) {
  protocol::FrameSpec spec;
  spec.net.dst_mac = {0x02, 0, 0, 0, 0, 2};
  spec.net.src_mac = {0x02, 0, 0, 0, 0, 1};
  spec.net.src_ip = protocol::Ipv4Mapped(10, 0, 0, 1);
  spec.net.dst_ip = protocol::Ipv4Mapped(10, 0, 0, 2);
  spec.hdr.bth.opcode = opcode;
  spec.hdr.bth.dest_qp = 0x12;
  spec.hdr.bth.psn = 100;
  spec.hdr.reth.dma_len = static_cast<uint32_t>(len);
  std::vector<uint8_t> payload(len, 0x5A);
  std::vector<uint8_t> frame(9216);
  protocol::ParsedFrame parsed;
  for (auto _ : state) {
    benchmark::DoNotOptimize(payload.data());
    const size_t n = protocol::BuildRoceFrame(spec, payload, frame);
    const protocol::ParseError e =
        protocol::ParseFrame(std::span(frame.data(), n), &parsed);
    benchmark::DoNotOptimize(parsed);
    if (e != protocol::ParseError::kOk) state.SkipWithError("parse");
    ++spec.hdr.bth.psn;
  }
  state.counters["ns_per_frame"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
void BM_CodecSend64B(benchmark::State& s) {
  Codec(s, protocol::kRcSendOnly, 64);
}
void BM_CodecWrite64B(benchmark::State& s) {
  Codec(s, protocol::kRcRdmaWriteOnly, 64);
}
void BM_CodecAck(benchmark::State& s) { Codec(s, protocol::kRcAcknowledge, 0); }
BENCHMARK(BM_CodecSend64B);
BENCHMARK(BM_CodecWrite64B);
BENCHMARK(BM_CodecAck);

// A device with one PD and one CQ, and the attributes of RC QPs with the
// given send/receive depth (one SGE): what the QP memory and scale
// benchmarks create their QPs on.
struct QpDevice {
  std::unique_ptr<nic::Rnic> nic;
  nic::PdHandle pd = 0;
  nic::QpInitAttr init;
};
QpDevice MakeQpDevice(uint32_t depth) {
  nic::RnicConfig cfg;
  cfg.device.max_qp = 1 << 17;
  QpDevice d{std::make_unique<nic::Rnic>(cfg)};
  d.pd = *d.nic->AllocPd();
  const nic::CqHandle cq = *d.nic->CreateCq(64);
  d.init.send_cq = cq;
  d.init.recv_cq = cq;
  d.init.cap = {depth, depth, 1, 1, 0};
  return d;
}

// Heap bytes and sizeof per idle RC QP (RESET state, created with the given
// send/receive queue depth), counted with mallinfo2 around the creations.
void BM_IdleQpBytes(benchmark::State& state) {
  const uint32_t depth = static_cast<uint32_t>(state.range(0));
  constexpr int kQps = 1000;
  double per_qp = 0;
  for (auto _ : state) {
    QpDevice d = MakeQpDevice(depth);
    // A first QP so that one-time growth of the QP map is not counted whole.
    (void)d.nic->CreateQp(d.pd, d.init);
    const size_t before = mallinfo2().uordblks;
    for (int i = 0; i < kQps; ++i) (void)d.nic->CreateQp(d.pd, d.init);
    const size_t after = mallinfo2().uordblks;
    per_qp = static_cast<double>(after - before) / kQps;
  }
  state.counters["heap_bytes_per_qp"] = per_qp;
  state.counters["sizeof_qp"] = sizeof(nic::Qp);
  state.counters["sizeof_send_wqe"] = sizeof(nic::SendWqe);
  state.counters["sizeof_recv_wr"] = sizeof(nic::RecvWr);
}
BENCHMARK(BM_IdleQpBytes)->Arg(1)->Arg(16)->Arg(256)->Iterations(1);

// Scale: 64 K RC QPs (send/receive depth 16, one SGE) on one device: the
// time to create them, the heap and resident bytes they take, then the
// cost of finding a QP by number at that size (random order), next to the
// same lookup with 16 QPs (BM_QpLookup/16).
void BM_Create64KQps(benchmark::State& state) {
  constexpr int kQps = 1 << 16;
  for (auto _ : state) {
    QpDevice d = MakeQpDevice(16);
    const bench::Footprint footprint;
    for (int i = 0; i < kQps; ++i) {
      if (!d.nic->CreateQp(d.pd, d.init).ok()) {
        state.SkipWithError("CreateQp");
        return;
      }
    }
    footprint.Report(state, "qp", kQps);
  }
  state.counters["qps"] = kQps;
}
BENCHMARK(BM_Create64KQps)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_QpLookup(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  QpDevice d = MakeQpDevice(1);
  std::vector<uint32_t> qpns;
  for (int i = 0; i < n; ++i) qpns.push_back(*d.nic->CreateQp(d.pd, d.init));
  std::mt19937 rng(1);
  std::shuffle(qpns.begin(), qpns.end(), rng);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(d.nic->GetQp(qpns[i]));
    if (++i == qpns.size()) i = 0;
  }
}
BENCHMARK(BM_QpLookup)->Arg(16)->Arg(1 << 16);

}  // namespace
}  // namespace rocemu::sim

BENCHMARK_MAIN();
