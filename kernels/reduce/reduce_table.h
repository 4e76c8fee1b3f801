// Internal: one table of reduction kernels per instruction set (see reduce_kernels.inc).
#pragma once

#include <cstddef>

namespace seam::kernels::detail {

/// dst[i] = op over srcs[0..nsrc)[i], for the table's dtype and op.
using ReduceFn = void (*)(void* dst, const void* const* srcs, size_t nsrc, size_t count);

/// Indexed [dtype slot][op]: slots f32, f64, i32, bf16, f16; ops sum, max, min.
constexpr int kDtypeSlots = 5;
constexpr int kOps = 3;
using ReduceTable = ReduceFn[kDtypeSlots][kOps];

extern const ReduceTable generic_table;
extern const ReduceTable avx2_table;
extern const ReduceTable avx512_table;

}  // namespace seam::kernels::detail
