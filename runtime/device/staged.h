// The staged path, where the GPUs cannot map each other's memory: the stream is synchronised, the
// data goes through pinned host memory and the host collectives, and comes back. Not capturable
// in a CUDA graph (it waits on the host); the debug log says when a communicator takes it.
#pragma once

#include <cuda_runtime_api.h>

#include <span>

#include "runtime/device/device_comm_impl.h"

namespace seam::device::staged {

comm::Work all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                      cudaStream_t stream);
comm::Work reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                          DType dtype, ReduceOp op, cudaStream_t stream);
comm::Work all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                      DType dtype, cudaStream_t stream);
comm::Work broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root, cudaStream_t stream);
comm::Work fused_norm(DeviceCommunicatorImpl& d, const Tensor& partial, const Tensor& residual,
                      const kernels::RmsNormSpec& norm, const Tensor* out, const kernels::Fp8Rows* fp8_out,
                      cudaStream_t stream);

}  // namespace seam::device::staged
