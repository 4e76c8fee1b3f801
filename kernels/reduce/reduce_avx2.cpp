// AVX2 build of the reduction kernels, chosen at run time when the CPU has AVX2 and F16C.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "kernels/reduce/reduce_table.h"

// clang has no GCC target pragma; its attribute region gives every function below the set.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif
#define SEAM_REDUCE_TABLE avx2_kernels
#define SEAM_REDUCE_STREAM 1
#define SEAM_REDUCE_BF16 0
#define SEAM_REDUCE_F16C 1
#define SEAM_REDUCE_VECTOR_BYTES 32
#include "kernels/reduce/reduce_kernels.inc"
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
