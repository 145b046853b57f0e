// Cost of reaching application memory (issue 6): a message of 64 B .. 1 MiB
// moved packet by packet (4096-byte payloads, as at path MTU 4096) between a
// memory region and one frame-sized buffer through the requester's Gather
// (out of the region) and the responder's Scatter (into it), for
//   Host    a region of memfd-backed pages mapped into this process (what
//           rocemu_alloc_buf gives the daemon), copied with memcpy;
//   Process the same range of another process's private memory, copied with
//           process_vm_readv/writev (a forked child that owns its pages);
//   Memcpy  plain memcpy of the same pieces: the ceiling.
// scripts/bench_memory.sh runs it and prints the ratios to memcpy.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "nic/mr_table.h"
#include "nic/pd_table.h"
#include "nic/sg_copy.h"

namespace rocemu::nic {
namespace {

constexpr size_t kMaxMessage = size_t{1} << 20;
constexpr size_t kMtu = 4096;
constexpr size_t kHeaders = 58;  // Eth + IPv4 + UDP + BTH + RETH

// Everything the benchmarks share, set up once in main().
struct Setup {
  uint8_t* host = nullptr;     // memfd pages mapped here
  uint8_t* process = nullptr;  // address of the child's private pages
  std::vector<uint8_t> plain = std::vector<uint8_t>(kMaxMessage);
  pid_t child = -1;
  PdTable pds{4};
  MrTable mrs{pds, 16, ~uint64_t{0}};
  PdHandle pd = 0;
  uint32_t host_key = 0;
  uint32_t process_key = 0;
};
Setup* g = nullptr;

bool Init() {
  g = new Setup;
  const int fd = memfd_create("rocemu-bench", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, kMaxMessage) != 0) return false;
  void* h =
      mmap(nullptr, kMaxMessage, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  void* p = mmap(nullptr, kMaxMessage, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED || p == MAP_FAILED) return false;
  g->host = static_cast<uint8_t*>(h);
  g->process = static_cast<uint8_t*>(p);
  std::memset(g->host, 0x11, kMaxMessage);
  std::memset(g->plain.data(), 0x22, kMaxMessage);
  int ready[2];
  if (pipe(ready) != 0) return false;
  g->child = fork();
  if (g->child == 0) {
    // Own every page (no copy-on-write sharing with the parent).
    std::memset(g->process, 0x33, kMaxMessage);
    const char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    for (;;) pause();
  }
  char c;
  if (g->child < 0 || read(ready[0], &c, 1) != 1) return false;
  close(ready[0]);
  close(ready[1]);
  // The parent's copy is not used; drop it so only the child's remains.
  munmap(g->process, kMaxMessage);
  g->pd = *g->pds.Alloc(kKernelClient);
  constexpr AccessFlags kRw = access::kLocalWrite | access::kRemoteWrite;
  const HostChunk chunk{g->host, kMaxMessage};
  absl::StatusOr<uint32_t> hk =
      g->mrs.Register(kKernelClient, g->pd, reinterpret_cast<uint64_t>(g->host),
                      kMaxMessage, kRw, {&chunk, 1});
  absl::StatusOr<uint32_t> pk = g->mrs.RegisterProcess(
      kKernelClient, g->pd, g->child, reinterpret_cast<uint64_t>(g->process),
      kMaxMessage, kRw);
  if (!hk.ok() || !pk.ok()) {
    std::fprintf(stderr, "registration failed: %s %s\n",
                 hk.status().ToString().c_str(),
                 pk.status().ToString().c_str());
    return false;
  }
  g->host_key = *hk;
  g->process_key = *pk;
  return true;
}

void Fini() {
  if (g != nullptr && g->child > 0) {
    kill(g->child, SIGKILL);
    waitpid(g->child, nullptr, 0);
  }
}

enum class Dir { kOut, kIn };  // out of the region into frames, or back

template <Dir kDir>
void Region(benchmark::State& state, uint8_t* base, uint32_t key) {
  const size_t len = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> frame(kHeaders + kMtu + 4, 0x44);
  const SgList sg = {
      Sge{reinterpret_cast<uint64_t>(base), static_cast<uint32_t>(len), key}};
  for (auto _ : state) {
    SgCursor cur;
    for (size_t off = 0; off < len; off += kMtu) {
      const std::span<uint8_t> payload(frame.data() + kHeaders,
                                       std::min(kMtu, len - off));
      MrStatus st;
      if constexpr (kDir == Dir::kOut) {
        st = Gather(g->mrs, g->pd, sg.span(), cur, payload);
      } else {
        st = Scatter(g->mrs, g->pd, sg.span(), cur, payload);
      }
      if (st != MrStatus::kOk) {
        state.SkipWithError(MrStatusName(st));
        return;
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}

template <Dir kDir>
void BM_Memcpy(benchmark::State& state) {
  const size_t len = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> frame(kHeaders + kMtu + 4, 0x44);
  uint8_t* src = g->plain.data();
  for (auto _ : state) {
    for (size_t off = 0; off < len; off += kMtu) {
      const size_t n = std::min(kMtu, len - off);
      if constexpr (kDir == Dir::kOut) {
        std::memcpy(frame.data() + kHeaders, src + off, n);
      } else {
        std::memcpy(src + off, frame.data() + kHeaders, n);
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * len));
}

template <Dir kDir>
void BM_Host(benchmark::State& state) {
  Region<kDir>(state, g->host, g->host_key);
}

template <Dir kDir>
void BM_Process(benchmark::State& state) {
  Region<kDir>(state, g->process, g->process_key);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->RangeMultiplier(4)->Range(64, kMaxMessage);
}

BENCHMARK(BM_Memcpy<Dir::kOut>)->Name("Memcpy/out")->Apply(Sizes);
BENCHMARK(BM_Host<Dir::kOut>)->Name("Host/out")->Apply(Sizes);
BENCHMARK(BM_Process<Dir::kOut>)->Name("Process/out")->Apply(Sizes);
BENCHMARK(BM_Memcpy<Dir::kIn>)->Name("Memcpy/in")->Apply(Sizes);
BENCHMARK(BM_Host<Dir::kIn>)->Name("Host/in")->Apply(Sizes);
BENCHMARK(BM_Process<Dir::kIn>)->Name("Process/in")->Apply(Sizes);

}  // namespace
}  // namespace rocemu::nic

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!rocemu::nic::Init()) {
    std::fprintf(stderr, "memory_bench: setup failed\n");
    rocemu::nic::Fini();
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rocemu::nic::Fini();
  return 0;
}
