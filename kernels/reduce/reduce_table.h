// Internal: the kernels of each instruction set (see reduce_kernels.inc).
#pragma once

#include <cstddef>

namespace seam::kernels::detail {

/// dst[i] = op over srcs[0..nsrc)[i], for the table's dtype and op.
using ReduceFn = void (*)(void* dst, const void* const* srcs, size_t nsrc, size_t count);

/// As ReduceFn with non-temporal stores into dst; with `kept`, the result is also left there
/// (cached).
using StreamingReduceFn = void (*)(void* dst, void* kept, const void* const* srcs, size_t nsrc,
                                   size_t count);

/// Indexed [dtype slot][op]: slots f32, f64, i32, bf16, f16; ops sum, max, min.
constexpr int kDtypeSlots = 5;
constexpr int kOps = 3;
using ReduceTable = ReduceFn[kDtypeSlots][kOps];
using StreamingReduceTable = StreamingReduceFn[kDtypeSlots][kOps];

/// One instruction set's kernels: reductions with plain and with non-temporal stores, and a
/// copy with non-temporal stores.
struct IsaKernels {
  ReduceTable reduce;
  StreamingReduceTable reduce_streaming;
  void (*copy_streaming)(void* dst, const void* src, size_t bytes);
};

extern const IsaKernels generic_kernels;
extern const IsaKernels avx2_kernels;
extern const IsaKernels avx512_kernels;
extern const IsaKernels avx512bf16_kernels;  ///< avx512 with AVX-512 BF16 conversions

}  // namespace seam::kernels::detail
