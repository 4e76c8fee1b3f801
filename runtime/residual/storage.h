// Storage: owned memory on a Device — host memory (a Buffer) or CUDA device memory allocated
// through the device path (kernels/device/device_ops.h). What the boundary's workspaces, a norm's
// output and an OwnedTensor live in, on the device of the tensors they serve.
#pragma once

#include <cstddef>
#include <memory>

#include "seam/tensor.h"

namespace seam::kernels {
class DeviceOps;
}

namespace seam::residual {

class Storage {
 public:
  Storage() = default;
  /// bytes of memory on `device` (host memory is zero-filled; device memory is not).
  Storage(size_t bytes, Device device);
  void* data() const { return host_.data() ? host_.data() : device_.get(); }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_kind_; }
  /// Whether this storage holds at least `bytes` on `device`.
  bool fits(size_t bytes, Device device) const { return bytes <= bytes_ && device == device_kind_; }
  /// A contiguous rows x cols view (must fit).
  Tensor as_tensor(DType dtype, int64_t rows, int64_t cols) const;

 private:
  // Released through the implementation that allocated it.
  struct Release {
    int device;
    kernels::DeviceOps* ops;
    void operator()(void* p) const;
  };
  Buffer host_;
  std::unique_ptr<void, Release> device_{nullptr, Release{-1, nullptr}};
  size_t bytes_ = 0;
  Device device_kind_{};
};

}  // namespace seam::residual
