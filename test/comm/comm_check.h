// Tiny checks for multi-process integration tests: a failed check prints the rank, the place
// and the condition, and exits non-zero (mpirun/the launcher then fails the test).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace seam::test {
inline int& check_rank() {
  static int r = -1;
  return r;
}
}  // namespace seam::test

#define COMM_CHECK(cond, ...)                                                                 \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "[rank %d] %s:%d: CHECK failed: %s", seam::test::check_rank(),     \
                   __FILE__, __LINE__, #cond);                                                \
      std::fprintf(stderr, " " __VA_ARGS__);                                                  \
      std::fprintf(stderr, "\n");                                                             \
      std::fflush(stderr);                                                                    \
      std::_Exit(1);                                                                          \
    }                                                                                         \
  } while (0)
