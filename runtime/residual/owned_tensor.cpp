#include <cstdint>
#include "runtime/residual/owned_tensor.h"

#include "kernels/norm/elementwise.h"

namespace seam::residual {

OwnedTensor OwnedTensor::zeros(DType dtype, int64_t rows, int64_t cols) {
  OwnedTensor t;
  t.storage = Buffer(static_cast<size_t>(rows * cols) * dtype_size(dtype));
  t.view = Tensor::contiguous(t.storage.data(), dtype, rows, cols);
  return t;
}

OwnedTensor OwnedTensor::clone(const Tensor& source) {
  OwnedTensor t = zeros(source.dtype, source.rows, source.cols);
  kernels::copy(source, t.view);
  return t;
}

}  // namespace seam::residual
