#include <cstdint>
#include "runtime/residual/owned_tensor.h"

#include "kernels/device/device_ops.h"
#include "kernels/norm/elementwise.h"

namespace seam::residual {

OwnedTensor OwnedTensor::zeros(DType dtype, int64_t rows, int64_t cols, Device device) {
  OwnedTensor t;
  t.storage = Storage(static_cast<size_t>(rows * cols) * dtype_size(dtype), device);
  t.view = t.storage.as_tensor(dtype, rows, cols);
  if (device.is_cuda() && t.view.rows > 0) kernels::device_ops().zero(t.view);
  return t;
}

OwnedTensor OwnedTensor::clone(const Tensor& source) { return clone(source, source.device); }

OwnedTensor OwnedTensor::clone(const Tensor& source, Device device) {
  OwnedTensor t;
  t.storage = Storage(source.bytes(), device);
  t.view = t.storage.as_tensor(source.dtype, source.rows, source.cols);
  kernels::copy(source, t.view);
  return t;
}

}  // namespace seam::residual
