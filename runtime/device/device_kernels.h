// The residual path's kernels on CUDA device tensors (kernels::DeviceOps over kernels/cuda), on the
// calling thread's current stream. Internal to seam::cuda.
#pragma once

namespace seam::device {

/// Installs them for the host library's dispatch (idempotent; done by BoundaryDevice::attach and
/// DeviceCommunicator::create).
void install_device_kernels();

}  // namespace seam::device
