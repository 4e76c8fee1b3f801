// AVX2 build of the reduction kernels, chosen at run time when the CPU has AVX2 and F16C.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "kernels/reduce/reduce_table.h"

#define SEAM_REDUCE_TABLE avx2_kernels
#define SEAM_REDUCE_TARGET "avx2,fma,f16c"
#define SEAM_REDUCE_VECTOR_BYTES 32
#include "kernels/reduce/reduce_kernels.inc"
