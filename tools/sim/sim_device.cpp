#include "tools/sim/sim_device.h"

#include <cstdlib>
#include <string>

#include "seam/errors.h"
#include "tools/common/cli.h"
#include "runtime/boundary/rows/host_fusion.h"

#ifdef SEAM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "runtime/device/boundary_device.h"
#include "runtime/device/current_stream.h"
#endif

namespace seam::sim {

#ifdef SEAM_HAVE_CUDA

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

std::string SimDevice::unavailable() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  return count > 0 ? "" : "no CUDA device";
}

struct SimDevice::Cuda {
  cudaStream_t stream = nullptr;
  std::unique_ptr<device::BoundaryDevice> boundary;
  std::unique_ptr<device::StreamGuard> guard;
};

SimDevice::SimDevice(boundary::rows::ProcessGroups& groups, bool cuda) {
  if (!cuda) return;
  int count = 0;
  check(cudaGetDeviceCount(&count), "no CUDA device");
  const int ordinal = cli::launcher_local_rank() % count;
  check(cudaSetDevice(ordinal), "cudaSetDevice");
  cuda_ = std::make_unique<Cuda>();
  check(cudaStreamCreateWithFlags(&cuda_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_->guard = std::make_unique<device::StreamGuard>(cuda_->stream);
  cuda_->boundary = device::BoundaryDevice::attach(groups, ordinal);
  device_ = Device::cuda(ordinal);
}

SimDevice::~SimDevice() {
  if (!cuda_) return;
  cudaStreamSynchronize(cuda_->stream);
  cuda_->boundary.reset();
  cuda_->guard.reset();
  cudaStreamDestroy(cuda_->stream);
}

std::shared_ptr<const boundary::FusionProvider> SimDevice::fusions(boundary::rows::ProcessGroups& groups) const {
  if (cuda_) return cuda_->boundary->fusions();
  return std::make_shared<boundary::rows::HostAllReduceNormFusion>(groups);
}

void SimDevice::finish() const {
  if (!cuda_) return;
  check(cudaStreamSynchronize(cuda_->stream), "the stream");
  cuda_->boundary->check();
}

#else

struct SimDevice::Cuda {};

std::string SimDevice::unavailable() { return "this build has no CUDA (configure where nvcc is found)"; }

SimDevice::SimDevice(boundary::rows::ProcessGroups&, bool cuda) {
  if (cuda) throw NotSupportedError("--device cuda: " + unavailable());
}

SimDevice::~SimDevice() = default;

std::shared_ptr<const boundary::FusionProvider> SimDevice::fusions(boundary::rows::ProcessGroups& groups) const {
  return std::make_shared<boundary::rows::HostAllReduceNormFusion>(groups);
}

void SimDevice::finish() const {}

#endif

}  // namespace seam::sim
