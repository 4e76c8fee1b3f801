// Test support: run a check once per instruction set the host row kernels can use.
#pragma once

#include <doctest/doctest.h>

#include "kernels/norm/norm_rows.h"

namespace seam::test {

/// Runs f under the baseline row loops, then under AVX2 + F16C where this CPU has them.
template <class F>
void for_each_isa(F&& f) {
  for (bool avx2 : {false, true}) {
    const bool supported = kernels::detail::allow_avx2(avx2);
    if (avx2 && !supported) {
      MESSAGE("no AVX2 + F16C on this CPU: only the baseline row loops were checked");
      continue;
    }
    INFO("AVX2 row loops: " << avx2);
    f();
  }
  kernels::detail::allow_avx2(true);
}

}  // namespace seam::test
