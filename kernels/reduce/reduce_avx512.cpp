// AVX-512 build of the reduction kernels, chosen at run time when the CPU has AVX-512 F/BW/VL
// (and not AVX-512 BF16: reduce_avx512bf16.cpp).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "kernels/reduce/reduce_table.h"

// clang has no GCC target pragma; its attribute region gives every function below the set.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c,prefer-vector-width=512")
#endif
#define SEAM_REDUCE_TABLE avx512_kernels
#define SEAM_REDUCE_STREAM 2
#define SEAM_REDUCE_BF16 0
#define SEAM_REDUCE_F16C 1
#define SEAM_REDUCE_VECTOR_BYTES 64
#include "kernels/reduce/reduce_kernels.inc"
#ifdef __clang__
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
