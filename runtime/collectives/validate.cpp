#include "runtime/collectives/validate.h"

#include <string>

#include "layouts/errors.h"

namespace seam::collectives {

void check_counts(std::string_view collective, const Group& g, std::span<const size_t> counts) {
  if (counts.size() != static_cast<size_t>(g.size()))
    throw ValueError(std::string(collective) + ": " + std::to_string(counts.size()) +
                     " counts for a group of " + std::to_string(g.size()) + " ranks");
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

void check_root(std::string_view collective, const Group& g, int root) {
  if (root < 0 || root >= g.size())
    throw ValueError(std::string(collective) + ": root " + std::to_string(root) +
                     " is not a rank of a group of " + std::to_string(g.size()));
}

}  // namespace seam::collectives
