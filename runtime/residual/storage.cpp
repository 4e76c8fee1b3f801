#include "runtime/residual/storage.h"

#include "kernels/device/device_ops.h"
#include "seam/errors.h"

namespace seam::residual {

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_kind_(device) {
  if (!device.is_cuda()) {
    host_ = Buffer(bytes);
    return;
  }
  if (bytes == 0) return;
  kernels::DeviceOps& ops = kernels::device_ops();
  device_ = {ops.allocate(bytes, device.index), Release{device.index, &ops}};
}

void Storage::Release::operator()(void* p) const {
  if (p) ops->release(p, device);
}

Tensor Storage::as_tensor(DType dtype, int64_t rows, int64_t cols) const {
  if (static_cast<size_t>(rows * cols) * dtype_size(dtype) > bytes_) throw ValueError("storage: the view does not fit");
  return Tensor::contiguous(data(), dtype, rows, cols, device_kind_);
}

}  // namespace seam::residual
