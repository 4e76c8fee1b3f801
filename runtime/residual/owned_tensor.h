// OwnedTensor: a tensor together with the storage it views — what a snapshot or a fresh capture
// sum returns (storage nothing else writes).
#pragma once

#include <cstdint>

#include "seam/tensor.h"
#include "runtime/residual/storage.h"

namespace seam::residual {

struct OwnedTensor {
  Storage storage;
  Tensor view;

  /// A zero-filled contiguous tensor on `device` (host memory by default).
  static OwnedTensor zeros(DType dtype, int64_t rows, int64_t cols, Device device = {});
  /// A contiguous copy of t, on t's device.
  static OwnedTensor clone(const Tensor& t);
  /// A contiguous copy of t on `device` (e.g. a device tensor brought to host memory).
  static OwnedTensor clone(const Tensor& t, Device device);
};

}  // namespace seam::residual
