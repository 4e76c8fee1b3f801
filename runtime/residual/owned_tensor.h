// OwnedTensor: a tensor together with the storage it views — what a snapshot or a fresh capture
// sum returns (storage nothing else writes).
#pragma once

#include <cstdint>

#include "layouts/tensor.h"

namespace seam::residual {

struct OwnedTensor {
  Buffer storage;
  Tensor view;

  /// A zero-filled contiguous host tensor.
  static OwnedTensor zeros(DType dtype, int64_t rows, int64_t cols);
  /// A contiguous copy of t.
  static OwnedTensor clone(const Tensor& t);
};

}  // namespace seam::residual
