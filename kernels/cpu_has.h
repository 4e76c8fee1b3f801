// CPU features read from CPUID, for those __builtin_cpu_supports does not name in every compiler
// (clang 14 knows neither "f16c" nor "avx512bf16"). Whether the OS saves the AVX registers is the
// caller's check, through __builtin_cpu_supports("avx2") or ("avx512f").
#pragma once

#include <cpuid.h>

namespace seam::kernels {

inline bool cpu_has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}

inline bool cpu_has_avx512bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;  // leaf 7, sub-leaf 1: EAX bit 5
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0;
}

}  // namespace seam::kernels
