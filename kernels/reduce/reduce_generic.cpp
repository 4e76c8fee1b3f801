// Portable build of the reduction kernels (SSE2 baseline), the fallback.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "kernels/reduce/reduce_table.h"
#include "seam/detail/f16_soft.h"

#define SEAM_REDUCE_TABLE generic_kernels
#include "kernels/reduce/reduce_kernels.inc"
