// AVX-512 build of the reduction kernels, chosen at run time when the CPU has AVX-512 F/BW/VL
// (and not AVX-512 BF16: reduce_avx512bf16.cpp).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "kernels/reduce/reduce_table.h"

#define SEAM_REDUCE_TABLE avx512_kernels
#define SEAM_REDUCE_TARGET "avx512f,avx512bw,avx512vl,avx2,fma,f16c"
#define SEAM_REDUCE_VECTOR_BYTES 64
#include "kernels/reduce/reduce_kernels.inc"
