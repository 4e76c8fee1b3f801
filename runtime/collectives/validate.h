// Argument checks every collective entry point runs before scheduling anything.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "seam/dtype.h"

namespace seam::collectives {

/// ValueError unless there is one count per rank of a group of `ranks`.
void check_counts(std::string_view collective, int ranks, std::span<const size_t> counts);
/// ValueError unless dtype has a reduction kernel (f32, f64, i32, bf16, f16).
void check_reducible(std::string_view collective, DType dtype);
/// ValueError unless `rank` (the call's `role`: "root", "peer") is a rank of a group of `ranks`.
void check_rank(std::string_view collective, std::string_view role, int ranks, int rank);
/// TypeError unless dtype is one of DType's values; ValueError unless op is one of ReduceOp's.
void check_dtype(std::string_view collective, DType dtype);
void check_op(std::string_view collective, ReduceOp op);
/// The three above for a reduction: dtype and op are valid, and dtype has a reduction kernel.
void check_reduction(std::string_view collective, DType dtype, ReduceOp op);
/// Bytes of count elements times `times` (ranks' blocks), ValueError where the product overflows.
size_t checked_bytes(std::string_view collective, size_t count, DType dtype, size_t times = 1);
/// Bytes of the counts' sum, ValueError where the sum or its bytes overflow.
size_t checked_total_bytes(std::string_view collective, std::span<const size_t> counts, DType dtype);
/// ValueError where `what` is null and holds bytes.
void check_buffer(std::string_view collective, std::string_view what, const void* p, size_t bytes);
/// ValueError where [send, +send_bytes) and [recv, +recv_bytes) overlap other than in the in-place
/// form, send == recv + send_minus_recv (bytes; the forms of communicator.h).
void check_overlap(std::string_view collective, const void* send, size_t send_bytes, const void* recv,
                   size_t recv_bytes, std::ptrdiff_t send_minus_recv);

}  // namespace seam::collectives
