// Scratch: one reusable host buffer that grows on demand — the intermediate rows a multi-step move
// needs (a reduce-scatter's chunk before its all-gather, a fused candidate's gathered partials).
// A view stays valid until the next get() on the same Scratch; uses() counts the get() calls.
#pragma once

#include <cstdint>

#include "layouts/tensor.h"

namespace seam::boundary::rows {

class Scratch {
 public:
  /// A contiguous rows x cols view of this scratch's storage (contents unspecified).
  Tensor get(DType dtype, int64_t rows, int64_t cols);
  uint64_t uses() const { return uses_; }

 private:
  Buffer buffer_;
  uint64_t uses_ = 0;
};

}  // namespace seam::boundary::rows
