// Issue 3's RNIC benchmarks in the simulator (not tests): frames per second
// through requester + responder + completer of two Rnics on one core, and
// the memory of an idle QP. The ceiling for the first is simnet_bench (the
// simulator alone, same link model).
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tests/sim/matrix_pair.h"

namespace rocemu::sim {
namespace {

// Streams `len`-byte WRITEs (or SENDs) A -> B, `window` outstanding, and
// reports frames (both directions) per second of the benchmark's CPU time.
void Stream(benchmark::State& state, nic::WrOpcode op, uint32_t len) {
  PairOptions po;
  po.mtu = nic::PathMtu::kMtu4096;
  po.link.rate_bps = 100'000'000'000;
  po.link.propagation_delay_ns = 1000;
  po.buf_size = 1 << 20;
  auto pair = MatrixPair::Create(po);
  if (!pair.ok()) {
    state.SkipWithError("pair");
    return;
  }
  MatrixPair& p = **pair;
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
      (void)p.b().nic.PostRecv(p.b().qpn, r);
    }
    (void)p.a().nic.PostSend(p.a().qpn, wr);
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

// Heap bytes and sizeof per idle RC QP (RESET state, created with the given
// send/receive queue depth), counted with mallinfo2 around the creations.
void BM_IdleQpBytes(benchmark::State& state) {
  const uint32_t depth = static_cast<uint32_t>(state.range(0));
  constexpr int kQps = 1000;
  double per_qp = 0;
  for (auto _ : state) {
    nic::RnicConfig cfg;
    cfg.device.max_qp = 1 << 16;
    auto nic = std::make_unique<nic::Rnic>(cfg);
    const nic::PdHandle pd = *nic->AllocPd();
    const nic::CqHandle cq = *nic->CreateCq(64);
    nic::QpInitAttr init;
    init.send_cq = cq;
    init.recv_cq = cq;
    init.cap = {depth, depth, 1, 1, 0};
    // A first QP so that one-time growth of the QP map is not counted whole.
    (void)nic->CreateQp(pd, init);
    const size_t before = mallinfo2().uordblks;
    for (int i = 0; i < kQps; ++i) (void)nic->CreateQp(pd, init);
    const size_t after = mallinfo2().uordblks;
    per_qp = static_cast<double>(after - before) / kQps;
  }
  state.counters["heap_bytes_per_qp"] = per_qp;
  state.counters["sizeof_qp"] = sizeof(nic::Qp);
  state.counters["sizeof_send_wqe"] = sizeof(nic::SendWqe);
  state.counters["sizeof_recv_wr"] = sizeof(nic::RecvWr);
}
BENCHMARK(BM_IdleQpBytes)->Arg(1)->Arg(16)->Arg(256)->Iterations(1);

}  // namespace
}  // namespace rocemu::sim

BENCHMARK_MAIN();
