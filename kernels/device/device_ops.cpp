#include "kernels/device/device_ops.h"

#include <atomic>
#include <string>

#include "seam/errors.h"

namespace seam::kernels {
namespace {

std::atomic<DeviceOps*> installed{nullptr};

std::string where(const Device& d) { return d.is_cuda() ? "cuda:" + std::to_string(d.index) : "host memory"; }

}  // namespace

void install_device_ops(DeviceOps* ops) { installed.store(ops, std::memory_order_release); }

DeviceOps& device_ops() {
  DeviceOps* ops = installed.load(std::memory_order_acquire);
  if (!ops)
    throw NotSupportedError(
        "a tensor in CUDA memory needs Seam's device path: link seam::cuda and attach it "
        "(seam::device::BoundaryDevice::attach)");
  return *ops;
}

bool any_on_device(std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors)
    if (t && t->device.is_cuda()) return true;
  return false;
}

void require_same_device(std::initializer_list<const Tensor*> tensors, const Tensor& like, const char* op) {
  for (const Tensor* t : tensors)
    if (t && !(t->device == like.device))
      throw ValueError(std::string(op) + ": operands in " + where(t->device) + " and " + where(like.device) +
                       " (every operand of this call must be in the same memory)");
}

}  // namespace seam::kernels
