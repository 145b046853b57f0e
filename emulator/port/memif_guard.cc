#include "emulator/port/memif_guard.h"

#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace rocemu::emulator {
namespace {

std::atomic<uint64_t> g_contained{0};
std::atomic<bool> g_injected{false};
// A page nothing maps: what the injected fault reads.
void* g_hole = nullptr;
struct sigaction g_previous[2];

}  // namespace

sigjmp_buf*& MemifGuard::Armed() {
  static thread_local sigjmp_buf* armed = nullptr;
  return armed;
}

void MemifGuard::OnFault(int sig, siginfo_t*, void*) {
  sigjmp_buf*& armed = Armed();
  if (sigjmp_buf* env = armed; env != nullptr) {
    armed = nullptr;
    g_contained.fetch_add(1, std::memory_order_relaxed);
    siglongjmp(*env, 1);
  }
  // Not a guarded burst: the previous action, and the instruction faults
  // again under it (a core dump shows the real place).
  sigaction(sig, &g_previous[sig == SIGBUS ? 1 : 0], nullptr);
}

void MemifGuard::Install() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = OnFault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_previous[0]);
    sigaction(SIGBUS, &sa, &g_previous[1]);
  });
}

void MemifGuard::InjectFault() {
  if (g_hole == nullptr) {
    void* p =
        mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    g_hole = p;
  }
  g_injected.store(true, std::memory_order_release);
}

bool MemifGuard::TakeInjected() {
  return g_injected.load(std::memory_order_relaxed) &&
         g_injected.exchange(false, std::memory_order_acquire);
}

void MemifGuard::Fault() {
  (void)*static_cast<volatile const char*>(g_hole);
  std::abort();  // the page was mapped after all: never contained silently
}

uint64_t MemifGuard::contained() {
  return g_contained.load(std::memory_order_relaxed);
}

}  // namespace rocemu::emulator
