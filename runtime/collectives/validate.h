// Argument checks every collective entry point runs before scheduling anything.
#pragma once

#include <span>
#include <string_view>

#include "layouts/dtype.h"
#include "runtime/collectives/group.h"

namespace seam::collectives {

/// ValueError unless there is one count per rank of the group.
void check_counts(std::string_view collective, const Group& g, std::span<const size_t> counts);
/// ValueError unless dtype has a reduction kernel (f32, f64, i32, bf16, f16).
void check_reducible(std::string_view collective, DType dtype);
/// ValueError unless root is a rank of the group.
void check_root(std::string_view collective, const Group& g, int root);

}  // namespace seam::collectives
