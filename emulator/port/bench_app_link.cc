#include "emulator/port/bench_app_link.h"

#include <rte_cycles.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <new>

namespace rocemu::emulator {

namespace {

// Spins until `link->land` passes `seen` or the daemon says stop; the
// value read, or 0 on stop.
uint64_t WaitLanded(AppLink* link, uint64_t seen, uint32_t spin) {
  uint32_t k = 0;
  for (;;) {
    const uint64_t l = link->land.v.load(std::memory_order_acquire);
    if (l > seen) return l;
    if (link->stop.v.load(std::memory_order_relaxed) != 0) return 0;
    if (++k == spin) {
      k = 0;
      sched_yield();
    }
  }
}

void RunInitiator(AppLink* link, uint32_t spin) {
  const uint32_t total = link->warmup + link->iterations;
  for (uint64_t i = 1; i <= total; ++i) {
    const uint64_t t0 = rte_rdtsc();
    link->post.v.store(i, std::memory_order_release);
    if (WaitLanded(link, i - 1, spin) == 0) return;
    const uint64_t t1 = rte_rdtsc();
    if (i > link->warmup) link->samples()[i - 1 - link->warmup] = t1 - t0;
  }
  link->done.v.store(1, std::memory_order_release);
}

void RunResponder(AppLink* link, uint32_t spin) {
  uint64_t seen = 0;
  while ((seen = WaitLanded(link, seen, spin)) != 0) {
    link->post.v.store(seen, std::memory_order_release);
  }
}

}  // namespace

AppLink* MapAppLink(uint32_t warmup, uint32_t iterations) {
  const size_t bytes = sizeof(AppLink) + sizeof(uint64_t) * iterations;
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* link = new (m) AppLink;
  link->warmup = warmup;
  link->iterations = iterations;
  return link;
}

pid_t ForkApplication(AppLink* link, bool initiator, int cpu, uint32_t spin) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  // The child: no DPDK, no stdio; gone with its daemon.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof(set), &set);
  }
  if (initiator) {
    RunInitiator(link, spin);
  } else {
    RunResponder(link, spin);
  }
  _exit(0);
}

}  // namespace rocemu::emulator
