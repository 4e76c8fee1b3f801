// The staged path, where the GPUs cannot map each other's memory (ranks on several hosts, or
// SEAM_CUDA_PEER=off): each call is cut into chunks that go through pinned host memory and the
// host collectives on the communicator's StagedPipeline, ordered on the caller's stream; the
// caller does not wait. Not capturable in a CUDA graph (the host collectives run when the call is
// made, not at replay); the debug log says when a communicator takes this path.
#pragma once

#include <cuda_runtime_api.h>

#include <span>

#include "runtime/device/device_comm_impl.h"

namespace seam::device::staged {

void all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                cudaStream_t stream, cudaStreamCaptureStatus capture);
void reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                    DType dtype, ReduceOp op, cudaStream_t stream, cudaStreamCaptureStatus capture);
void all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                cudaStream_t stream, cudaStreamCaptureStatus capture);
void broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root, cudaStream_t stream,
               cudaStreamCaptureStatus capture);
void send(DeviceCommunicatorImpl& d, const void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream,
          cudaStreamCaptureStatus capture);
void recv(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream,
          cudaStreamCaptureStatus capture);
void fused_norm(DeviceCommunicatorImpl& d, const Tensor& partial, const Tensor& residual,
                const kernels::RmsNormSpec& norm, const Tensor* out, const kernels::Fp8Rows* fp8_out,
                cudaStream_t stream, cudaStreamCaptureStatus capture);

}  // namespace seam::device::staged
