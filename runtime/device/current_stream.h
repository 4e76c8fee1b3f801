// The calling thread's current CUDA stream: where boundary work on device tensors (runtime/boundary
// through BoundaryDevice) is enqueued, as PyTorch's current stream is for its kernels.
#pragma once

#include <cuda_runtime_api.h>

namespace seam::device {

/// The calling thread's current stream: the legacy default stream (0) until a StreamGuard sets one.
cudaStream_t current_stream();
/// Sets the calling thread's current stream (the public StreamScope restores it itself).
void set_current_stream(cudaStream_t stream);

/// Makes `stream` the calling thread's current stream for the guard's life, then restores the
/// previous one.
class StreamGuard {
 public:
  explicit StreamGuard(cudaStream_t stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  cudaStream_t previous_;
};

}  // namespace seam::device
