// MR lookup and check cost (issue 3: "MR lookup cost"), against the cost of
// copying the 8 bytes such a check usually guards and of a hash-map lookup,
// measured in the same run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nic/mr_table.h"
#include "nic/pd_table.h"
#include "tests/bench/resident.h"

namespace rocemu::nic {
namespace {

struct Fixture {
  explicit Fixture(int n) : pds(4), mrs(pds, 1u << 20, uint64_t{1} << 40) {
    pd = *pds.Alloc(1);
    buf.resize(4096);
    HostChunk c{buf.data(), buf.size()};
    std::mt19937 rng(1);
    for (int i = 0; i < n; ++i) {
      keys.push_back(*mrs.Register(1, pd, 0x10000, buf.size(),
                                   access::kLocalWrite | access::kRemoteWrite,
                                   std::span(&c, 1)));
    }
    std::shuffle(keys.begin(), keys.end(), rng);
  }
  std::vector<uint8_t> buf;
  PdTable pds;
  MrTable mrs;
  PdHandle pd;
  std::vector<uint32_t> keys;
};

void BM_CheckRemote(benchmark::State& state) {
  Fixture f(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    const MemoryRegion* mr;
    MrStatus s = f.mrs.CheckRemote(f.keys[i], f.pd, 0, 0x10100, 1024,
                                   access::kRemoteWrite, &mr);
    benchmark::DoNotOptimize(s);
    benchmark::DoNotOptimize(mr);
    if (++i == f.keys.size()) i = 0;
  }
}
BENCHMARK(BM_CheckRemote)->Arg(16)->Arg(4096)->Arg(262144)->Arg(1 << 20);

// Ceiling: an absl::flat_hash_map lookup of the same keys.
void BM_FlatHashMapLookup(benchmark::State& state) {
  Fixture f(static_cast<int>(state.range(0)));
  absl::flat_hash_map<uint32_t, const MemoryRegion*> m;
  for (uint32_t k : f.keys) m[k] = f.mrs.Find(k);
  size_t i = 0;
  for (auto _ : state) {
    auto it = m.find(f.keys[i]);
    benchmark::DoNotOptimize(it);
    if (++i == f.keys.size()) i = 0;
  }
}
BENCHMARK(BM_FlatHashMapLookup)->Arg(16)->Arg(4096)->Arg(262144)->Arg(1 << 20);

// Scale: 1 M regions (the device's max_mr) registered in one table: the
// time per registration and the heap and resident bytes per region.
void BM_Register1MMrs(benchmark::State& state) {
  constexpr int kMrs = 1 << 20;
  for (auto _ : state) {
    std::vector<uint8_t> buf(4096);
    PdTable pds(4);
    const bench::Footprint footprint;
    MrTable mrs(pds, kMrs, uint64_t{1} << 40);
    const PdHandle pd = *pds.Alloc(1);
    HostChunk c{buf.data(), buf.size()};
    for (int i = 0; i < kMrs; ++i) {
      if (!mrs.Register(1, pd, 0x10000, buf.size(), access::kLocalWrite,
                        std::span(&c, 1))
               .ok()) {
        state.SkipWithError("Register");
        return;
      }
    }
    footprint.Report(state, "mr", kMrs);
  }
  state.counters["mrs"] = kMrs;
}
BENCHMARK(BM_Register1MMrs)->Iterations(1)->Unit(benchmark::kMillisecond);

void BM_Memcpy1K(benchmark::State& state) {
  std::vector<uint8_t> a(1024), b(1024);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Memcpy1K);

}  // namespace
}  // namespace rocemu::nic

BENCHMARK_MAIN();
