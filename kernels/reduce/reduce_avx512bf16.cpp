// AVX-512 build of the reduction kernels with AVX-512 BF16 conversions (vcvtne2ps2bf16), chosen
// at run time over reduce_avx512.cpp when the CPU has them.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "kernels/reduce/reduce_table.h"

#define SEAM_REDUCE_TABLE avx512bf16_kernels
#define SEAM_REDUCE_TARGET "avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c"
#define SEAM_REDUCE_VECTOR_BYTES 64
#define SEAM_REDUCE_BF16 1
#include "kernels/reduce/reduce_kernels.inc"
