// Argument checks every collective entry point runs before scheduling anything.
#pragma once

#include <span>
#include <string_view>

#include "layouts/dtype.h"

namespace seam::collectives {

/// ValueError unless there is one count per rank of a group of `ranks`.
void check_counts(std::string_view collective, int ranks, std::span<const size_t> counts);
/// ValueError unless dtype has a reduction kernel (f32, f64, i32, bf16, f16).
void check_reducible(std::string_view collective, DType dtype);
/// ValueError unless `rank` (the call's `role`: "root", "peer") is a rank of a group of `ranks`.
void check_rank(std::string_view collective, std::string_view role, int ranks, int rank);

}  // namespace seam::collectives
