#include "runtime/device/staged.h"

#include "kernels/cuda/norm.h"
#include "layouts/log.h"
#include "runtime/device/staged_flat.h"
#include "runtime/device/staged_pipeline.h"
#include "runtime/device/staged_two_level.h"
#include "runtime/device/stream_scratch.h"
#include "seam/errors.h"

namespace seam::device::staged {
namespace {

StagedPipeline& pipeline(DeviceCommunicatorImpl& d, cudaStreamCaptureStatus capture) {
  if (capture != cudaStreamCaptureStatusNone)
    throw UsageError("seam: device calls of a communicator staged through host memory (ranks on several hosts, or "
                     "no peer access between its GPUs) cannot be captured in a CUDA graph");
  return *d.pipeline;
}

}  // namespace

void all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                cudaStream_t stream, cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  if (d.local_level) {
    two_level_all_reduce(d, send, recv, count, dtype, op, stream);
    SEAM_LOG_DEBUG("seam: device all_reduce {} x {}: two levels, peer memory on each host and staged through host "
                   "memory between hosts", count, dtype_name(dtype));
    return;
  }
  flat_all_reduce(p, send, recv, count, dtype, op, stream);
  SEAM_LOG_DEBUG("seam: device all_reduce {} x {}: staged through host memory, {} chunk(s)", count, dtype_name(dtype),
                 p.chunks_for(count * dtype_size(dtype)));
}

void reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                    DType dtype, ReduceOp op, cudaStream_t stream, cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  if (d.local_level) {
    two_level_reduce_scatter(d, send, recv, counts, dtype, op, stream);
    SEAM_LOG_DEBUG("seam: device reduce_scatterv of {} blocks x {}: two levels, peer memory on each host and staged "
                   "through host memory between hosts", counts.size(), dtype_name(dtype));
    return;
  }
  const size_t K = flat_reduce_scatter(p, static_cast<size_t>(d.rank), send, recv, counts, dtype, op, stream);
  SEAM_LOG_DEBUG("seam: device reduce_scatterv of {} blocks x {}: staged through host memory, {} chunk(s)",
                 counts.size(), dtype_name(dtype), K);
}

void all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                cudaStream_t stream, cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  if (d.local_level) {
    two_level_all_gather(d, send, recv, counts, dtype, stream);
    SEAM_LOG_DEBUG("seam: device all_gatherv of {} blocks x {}: two levels, staged through host memory between "
                   "hosts and peer memory on each host", counts.size(), dtype_name(dtype));
    return;
  }
  const size_t K = flat_all_gather(p, static_cast<size_t>(d.rank), send, recv, counts, dtype, stream);
  SEAM_LOG_DEBUG("seam: device all_gatherv of {} blocks x {}: staged through host memory, {} chunk(s)",
                 counts.size(), dtype_name(dtype), K);
}

void broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root, cudaStream_t stream,
               cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  if (d.local_level) {
    two_level_broadcast(d, buffer, count, dtype, root, stream);
    SEAM_LOG_DEBUG("seam: device broadcast {} x {} from rank {}: two levels, peer memory on each host and staged "
                   "through host memory between hosts, a share per rank", count, dtype_name(dtype), root);
    return;
  }
  flat_broadcast(p, d.rank == root, root, buffer, count, dtype, stream);
  SEAM_LOG_DEBUG("seam: device broadcast {} x {} from rank {}: staged through host memory, {} chunk(s)", count,
                 dtype_name(dtype), root, p.chunks_for(count * dtype_size(dtype)));
}

void send(DeviceCommunicatorImpl& d, const void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream,
          cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  flat_send(p, buffer, count, dtype, peer, stream);
  SEAM_LOG_DEBUG("seam: device send {} x {} to rank {}: staged through host memory, {} chunk(s)", count,
                 dtype_name(dtype), peer, p.chunks_for(count * dtype_size(dtype)));
}

void recv(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream,
          cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  flat_recv(p, buffer, count, dtype, peer, stream);
  SEAM_LOG_DEBUG("seam: device recv {} x {} from rank {}: staged through host memory, {} chunk(s)", count,
                 dtype_name(dtype), peer, p.chunks_for(count * dtype_size(dtype)));
}

void fused_norm(DeviceCommunicatorImpl& d, const Tensor& partial, const Tensor& residual,
                const kernels::RmsNormSpec& norm, const Tensor* out, const kernels::Fp8Rows* fp8_out,
                cudaStream_t stream, cudaStreamCaptureStatus capture) {
  // The partial's rows, packed into a device scratch, are all-reduced there; the norm reads them.
  pipeline(d, capture);
  const size_t e = dtype_size(partial.dtype);
  const size_t row = static_cast<size_t>(partial.cols) * e, rows = static_cast<size_t>(partial.rows);
  // A failure here aborts the communicator (check_launch): the other ranks' chunks run anyway.
  const DeviceCall call = fp8_out ? DeviceCall::fused_norm_fp8 : DeviceCall::fused_norm;
  const StreamScratch scratch(d, call, row * rows, stream);
  d.check_launch(cudaMemcpy2DAsync(scratch.get(), row, partial.data, static_cast<size_t>(partial.row_stride) * e, row,
                                   rows, cudaMemcpyDeviceToDevice, stream),
                 call);
  all_reduce(d, scratch.get(), scratch.get(), static_cast<size_t>(partial.numel()), partial.dtype, ReduceOp::sum,
             stream, capture);
  const Tensor sum{scratch.get(), partial.dtype, partial.device, partial.rows, partial.cols, partial.cols};
  const cudaError_t launched = fp8_out ? kernels::cuda::add_rms_norm_fp8(sum, residual, nullptr, norm, *fp8_out, stream)
                                       : kernels::cuda::add_rms_norm(sum, residual, nullptr, norm, *out, stream);
  d.check_launch(launched, call);
}

}  // namespace seam::device::staged
