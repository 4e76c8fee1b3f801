#include "runtime/collectives/validate.h"

#include <string>

#include "layouts/errors.h"

namespace seam::collectives {

void check_counts(std::string_view collective, int ranks, std::span<const size_t> counts) {
  if (counts.size() != static_cast<size_t>(ranks))
    throw ValueError(std::string(collective) + ": " + std::to_string(counts.size()) +
                     " counts for a group of " + std::to_string(ranks) + " ranks");
}

void check_reducible(std::string_view collective, DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::f64:
    case DType::i32:
    case DType::bf16:
    case DType::f16: return;
    default:
      throw ValueError(std::string(collective) + ": cannot reduce dtype " +
                       std::string(dtype_name(dtype)));
  }
}

void check_rank(std::string_view collective, std::string_view role, int ranks, int rank) {
  if (rank < 0 || rank >= ranks)
    throw ValueError(std::string(collective) + ": " + std::string(role) + " " +
                     std::to_string(rank) + " is not a rank of a group of " + std::to_string(ranks));
}

}  // namespace seam::collectives
