// The calling thread's current CUDA stream: where boundary work on device tensors (runtime/boundary
// through BoundaryDevice) is enqueued, as PyTorch's current stream is for its kernels.
#pragma once

#include <cuda_runtime_api.h>

#include "seam/boundary_device.h"

namespace seam::device {

/// The calling thread's current stream: the legacy default stream (0) until a StreamScope sets one.
cudaStream_t current_stream();
/// Sets the calling thread's current stream (StreamScope restores the previous one).
void set_current_stream(cudaStream_t stream);

/// Makes `stream` the calling thread's current stream for the guard's life (the public StreamScope).
using StreamGuard = boundary::StreamScope;

}  // namespace seam::device
