// What creating many objects costs a process: heap (mallinfo2), resident
// bytes (/proc/self/statm: what the objects actually touch, not only what
// malloc hands out) and time, for the scale benchmarks.
#ifndef ROCEMU_TESTS_BENCH_RESIDENT_H_
#define ROCEMU_TESTS_BENCH_RESIDENT_H_

#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace rocemu::bench {

inline double ResidentBytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Started before the objects are made; Report() sets per-object counters
// named <what>_per_<unit> after they are.
class Footprint {
 public:
  Footprint()
      : heap_(mallinfo2().uordblks),
        resident_(ResidentBytes()),
        t0_(std::chrono::steady_clock::now()) {}
  template <typename State>
  void Report(State& state, const char* unit, double n) const {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_)
            .count();
    const std::string per = std::string("_per_") + unit;
    state.counters["create_ns" + per] = s * 1e9 / n;
    state.counters["heap_bytes" + per] =
        static_cast<double>(mallinfo2().uordblks - heap_) / n;
    state.counters["rss_bytes" + per] = (ResidentBytes() - resident_) / n;
  }

 private:
  size_t heap_;
  double resident_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace rocemu::bench

#endif  // ROCEMU_TESTS_BENCH_RESIDENT_H_
