#include "runtime/device/staged.h"

#include <numeric>

#include "kernels/cuda/norm.h"
#include "seam/errors.h"
#include "layouts/log.h"

namespace seam::device::staged {
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw CommError(std::string("seam: device staged path: ") + what + ": " + cudaGetErrorString(e));
}

/// Pinned host memory of at least `bytes`, after the stream's earlier work is done.
char* host_memory(DeviceCommunicatorImpl& d, size_t bytes, cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone)
    throw UsageError("seam: device calls of a communicator staged through host memory (no peer access between "
                     "its GPUs) cannot be captured in a CUDA graph");
  check(cudaStreamSynchronize(stream), "waiting for the stream");
  if (d.staging_bytes < bytes) {
    if (d.staging) cudaFreeHost(d.staging);
    d.staging = nullptr;
    d.staging_bytes = 0;
    check(cudaHostAlloc(&d.staging, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    d.staging_bytes = bytes;
  }
  return static_cast<char*>(d.staging);
}

void to_host(void* h, const void* dev, size_t bytes, cudaStream_t stream) {
  if (!bytes) return;
  check(cudaMemcpyAsync(h, dev, bytes, cudaMemcpyDeviceToHost, stream), "copy to host");
  check(cudaStreamSynchronize(stream), "copy to host");
}

void to_device(void* dev, const void* h, size_t bytes, cudaStream_t stream) {
  if (!bytes) return;
  check(cudaMemcpyAsync(dev, h, bytes, cudaMemcpyHostToDevice, stream), "copy to the device");
  check(cudaStreamSynchronize(stream), "copy to the device");
}

size_t align16(size_t b) { return (b + 15) / 16 * 16; }

}  // namespace

comm::Work all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                      cudaStream_t stream) {
  const size_t bytes = count * dtype_size(dtype);
  char* h = host_memory(d, bytes, stream);
  to_host(h, send, bytes, stream);
  d.host->all_reduce(h, h, count, dtype, op).wait();
  to_device(recv, h, bytes, stream);
  SEAM_LOG_DEBUG("seam: device all_reduce {} x {}: staged through host memory", count, dtype_name(dtype));
  return comm::Work();
}

comm::Work reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                          DType dtype, ReduceOp op, cudaStream_t stream) {
  const size_t e = dtype_size(dtype);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0}) * e;
  const size_t mine = counts[static_cast<size_t>(d.rank)] * e;
  char* h = host_memory(d, align16(total) + mine, stream);
  to_host(h, send, total, stream);
  d.host->reduce_scatterv(h, h + align16(total), counts, dtype, op).wait();
  to_device(recv, h + align16(total), mine, stream);
  SEAM_LOG_DEBUG("seam: device reduce_scatterv {} bytes: staged through host memory", total);
  return comm::Work();
}

comm::Work all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                      DType dtype, cudaStream_t stream) {
  const size_t e = dtype_size(dtype);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0}) * e;
  const size_t mine = counts[static_cast<size_t>(d.rank)] * e;
  char* h = host_memory(d, align16(total) + mine, stream);
  char* mine_at = h + align16(total);
  to_host(mine_at, send, mine, stream);
  d.host->all_gatherv(mine_at, h, counts, dtype).wait();
  to_device(recv, h, total, stream);
  SEAM_LOG_DEBUG("seam: device all_gatherv {} bytes: staged through host memory", total);
  return comm::Work();
}

comm::Work broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root, cudaStream_t stream) {
  const size_t bytes = count * dtype_size(dtype);
  char* h = host_memory(d, bytes, stream);
  if (d.rank == root) to_host(h, buffer, bytes, stream);
  d.host->broadcast(h, count, dtype, root).wait();
  if (d.rank != root) to_device(buffer, h, bytes, stream);
  return comm::Work();
}

comm::Work fused_norm(DeviceCommunicatorImpl& d, const Tensor& partial, const Tensor& residual,
                      const kernels::RmsNormSpec& norm, const Tensor* out, const kernels::Fp8Rows* fp8_out,
                      cudaStream_t stream) {
  // The sum goes back into a device scratch of the partial's shape, then the norm kernel reads it.
  const size_t e = dtype_size(partial.dtype);
  const size_t row = static_cast<size_t>(partial.cols) * e, bytes = row * static_cast<size_t>(partial.rows);
  char* h = host_memory(d, bytes, stream);
  check(cudaMemcpy2DAsync(h, row, partial.data, static_cast<size_t>(partial.row_stride) * e, row,
                          static_cast<size_t>(partial.rows), cudaMemcpyDeviceToHost, stream),
        "copy to host");
  check(cudaStreamSynchronize(stream), "copy to host");
  d.host->all_reduce(h, h, static_cast<size_t>(partial.numel()), partial.dtype, ReduceOp::sum).wait();
  void* scratch = nullptr;
  check(cudaMallocAsync(&scratch, bytes, stream), "scratch");
  check(cudaMemcpyAsync(scratch, h, bytes, cudaMemcpyHostToDevice, stream), "copy to the device");
  const Tensor sum{scratch, partial.dtype, partial.device, partial.rows, partial.cols, partial.cols};
  const cudaError_t launched = fp8_out ? kernels::cuda::add_rms_norm_fp8(sum, residual, nullptr, norm, *fp8_out, stream)
                                       : kernels::cuda::add_rms_norm(sum, residual, nullptr, norm, *out, stream);
  cudaFreeAsync(scratch, stream);
  check(launched, "the norm kernel");
  check(cudaStreamSynchronize(stream), "the norm kernel");
  return comm::Work();
}

}  // namespace seam::device::staged
