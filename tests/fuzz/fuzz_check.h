// An invariant inside a fuzz target: on violation, say which (file, line,
// condition) and abort, which libFuzzer reports as a crash with the input.
#ifndef ROCEMU_TESTS_FUZZ_FUZZ_CHECK_H_
#define ROCEMU_TESTS_FUZZ_FUZZ_CHECK_H_

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, \
                   __LINE__, #cond);                                  \
      std::abort();                                                   \
    }                                                                 \
  } while (0)

#endif  // ROCEMU_TESTS_FUZZ_FUZZ_CHECK_H_
