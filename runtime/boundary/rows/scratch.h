// Scratch: one reusable buffer that grows on demand — the intermediate rows a multi-step move
// needs (a reduce-scatter's chunk before its all-gather, a fused candidate's gathered partials),
// in the memory of the rows it serves (host, or their CUDA device).
// A view stays valid until the next get() on the same Scratch; uses() counts the get() calls.
#pragma once

#include <cstdint>

#include "seam/tensor.h"
#include "runtime/residual/storage.h"

namespace seam::boundary::rows {

class Scratch {
 public:
  /// A contiguous view of `rows` rows like `like` (its dtype, hidden size and device); contents
  /// unspecified.
  Tensor get(const Tensor& like, int64_t rows);
  uint64_t uses() const { return uses_; }

 private:
  residual::Storage storage_;
  uint64_t uses_ = 0;
};

}  // namespace seam::boundary::rows
