// Element-wise reductions on host memory (sum, max, min over f32, f64, i32, bf16, f16),
// vectorised for AVX-512 / AVX2 and chosen at run time, with a portable fallback.
// bf16/f16 are accumulated in FP32: every source of one call is summed in FP32 and the result
// rounded once, so an algorithm that reduces k peers' blocks in one call rounds once.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "seam/dtype.h"

namespace seam::kernels {

/// Instruction set a kernel runs with. best_reduce_isa() is the fastest this CPU supports, at
/// most SEAM_REDUCE_ISA's.
/// avx512bf16: AVX-512 with its BF16 conversions (bf16 rounded by vcvtne2ps2bf16).
enum class ReduceIsa { generic, avx2, avx512, avx512bf16 };
ReduceIsa best_reduce_isa();
std::string_view reduce_isa_name(ReduceIsa isa);
/// Whether this CPU can run kernels built for `isa`.
bool reduce_isa_supported(ReduceIsa isa);

/// How results reach memory. streaming: non-temporal stores that bypass the caches, for large
/// results nobody reads soon (it saves reading every destination line before writing it).
enum class Store { cached, streaming };

/// dst[i] = op(srcs[0][i], ..., srcs[n-1][i]) for i < count (n >= 1; n == 1 copies).
/// dst may alias any source exactly (not partially overlap). Throws ValueError on a dtype or
/// op without a kernel.
void reduce(void* dst, std::span<const void* const> srcs, size_t count, DType dtype, ReduceOp op,
            Store store = Store::cached);
/// As reduce(), with an explicit instruction set (tests compare every set with a reference).
void reduce(ReduceIsa isa, void* dst, std::span<const void* const> srcs, size_t count,
            DType dtype, ReduceOp op, Store store = Store::cached);
/// reduce() with Store::streaming into dst that also leaves the result in `kept` (count
/// elements, cached), in one pass: each 1 KiB block is folded into `kept` and streamed to dst
/// from there while in L1. For a result that goes to memory and is read again soon (written
/// into the peers). dst may alias a source exactly; `kept` must overlap neither dst nor a
/// source. Throws ValueError where reduce() does, and on a null `kept`.
void reduce_and_keep(void* dst, void* kept, std::span<const void* const> srcs, size_t count,
                     DType dtype, ReduceOp op);
/// As reduce_and_keep(), with an explicit instruction set.
void reduce_and_keep(ReduceIsa isa, void* dst, void* kept, std::span<const void* const> srcs,
                     size_t count, DType dtype, ReduceOp op);
/// memcpy, or with non-temporal stores (dst and src must not overlap).
void copy(void* dst, const void* src, size_t bytes, Store store);

/// dst = op(dst, src).
void reduce_into(void* dst, const void* src, size_t count, DType dtype, ReduceOp op);
/// dst = op(a, b).
void reduce2(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op);

}  // namespace seam::kernels
