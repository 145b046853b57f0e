// A test-and-test-and-set spin lock for the library's data-path queues
// (post to one QP, poll one CQ), as mlx5 takes a spinlock per queue: the
// critical sections are a few slot copies, so sleeping would cost more
// than spinning. Uncontended cost: one atomic exchange and one store.
#ifndef ROCEMU_VERBS_CLIENT_SPIN_LOCK_H_
#define ROCEMU_VERBS_CLIENT_SPIN_LOCK_H_

#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace rocemu::verbs {

class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) Relax();
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  static void Relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::atomic<bool> locked_{false};
};

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_CLIENT_SPIN_LOCK_H_
