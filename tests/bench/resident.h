// Resident bytes of this process (/proc/self/statm), for benchmarks that
// report what creating objects actually touches, not only what malloc
// hands out.
#ifndef ROCEMU_TESTS_BENCH_RESIDENT_H_
#define ROCEMU_TESTS_BENCH_RESIDENT_H_

#include <unistd.h>

#include <cstdio>

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

}  // namespace rocemu::bench

#endif  // ROCEMU_TESTS_BENCH_RESIDENT_H_
