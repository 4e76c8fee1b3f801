// DeviceOps: the residual path's kernels and memory on CUDA device tensors. The host library
// dispatches here when a tensor's Device is CUDA; seam::cuda provides the implementation and
// installs it (seam::device::BoundaryDevice::attach, DeviceCommunicator::create). Work is
// enqueued on the calling thread's current stream (seam::device::StreamGuard) and never
// synchronises with the host, except a copy to or from host memory, which returns complete.
#pragma once

#include <cstddef>
#include <initializer_list>

#include "kernels/norm/rms_norm.h"
#include "kernels/quant/norm_quant.h"
#include "seam/tensor.h"

namespace seam::kernels {

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  /// dst := src; either side may be host memory (same dtype and shape, rows may be strided).
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  /// t := 0.
  virtual void zero(const Tensor& t) = 0;
  /// dst := round(f32(dst) + f32(src)).
  virtual void add_inplace(const Tensor& dst, const Tensor& src) = 0;
  /// The device forms of kernels/norm/rms_norm.h and kernels/quant/norm_quant.h (same bits).
  virtual void rms_norm(const Tensor& x, const RmsNormSpec& norm, const Tensor& out) = 0;
  virtual void add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                            const Tensor& out) = 0;
  virtual void rms_norm_fp8(const Tensor& x, const RmsNormSpec& norm, const Fp8Rows& out) = 0;
  virtual void add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra,
                                const RmsNormSpec& norm, const Fp8Rows& out) = 0;
  /// bytes of memory on CUDA device `device` (ordered on the current stream), and its release.
  virtual void* allocate(size_t bytes, int device) = 0;
  virtual void release(void* data, int device) noexcept = 0;
};

/// Installs the implementation (kept for the life of the process; the last install wins).
void install_device_ops(DeviceOps* ops);
/// The installed implementation; NotSupportedError when this process has none.
DeviceOps& device_ops();

/// Whether any of the tensors lives in CUDA memory (they then take the device path).
bool any_on_device(std::initializer_list<const Tensor*> tensors);
/// ValueError unless every tensor is in the memory of `like`'s device (null entries are skipped).
void require_same_device(std::initializer_list<const Tensor*> tensors, const Tensor& like, const char* op);

}  // namespace seam::kernels
