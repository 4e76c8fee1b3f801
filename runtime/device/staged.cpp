#include "runtime/device/staged.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/cuda/norm.h"
#include "layouts/log.h"
#include "runtime/device/staged_pipeline.h"
#include "seam/errors.h"

namespace seam::device::staged {
namespace {

using Copy = StagedPipeline::Copy;

StagedPipeline& pipeline(DeviceCommunicatorImpl& d, cudaStreamCaptureStatus capture) {
  if (capture != cudaStreamCaptureStatusNone)
    throw UsageError("seam: device calls of a communicator staged through host memory (ranks on several hosts, or "
                     "no peer access between its GPUs) cannot be captured in a CUDA graph");
  return *d.pipeline;
}

/// Elements [lo, lo + n) of chunk c of K of `count`: the first count % K chunks one longer.
struct Piece {
  size_t lo, n;
};
Piece piece(size_t count, size_t c, size_t K) {
  const size_t base = count / K, extra = count % K;
  return Piece{c * base + std::min(c, extra), base + (c < extra ? 1 : 0)};
}

char* at(const void* p, size_t bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; }
size_t up64(size_t b) { return (b + 63) / 64 * 64; }

/// Per-rank pieces of chunk c: their counts, and where each rank's starts in the whole buffer.
void pieces_of(std::span<const size_t> counts, size_t c, size_t K, std::vector<size_t>& sub,
               std::vector<size_t>& from) {
  sub.resize(counts.size());
  from.resize(counts.size());
  size_t offset = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const Piece p = piece(counts[r], c, K);
    sub[r] = p.n;
    from[r] = offset + p.lo;
    offset += counts[r];
  }
}

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw CommError(std::string("seam: device staged path: ") + what + ": " + cudaGetErrorString(e));
}

}  // namespace

namespace {

void flat_all_reduce(StagedPipeline& p, const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                     cudaStream_t stream) {
  const size_t e = dtype_size(dtype), K = p.chunks_for(count * e);
  p.begin_call(stream);
  for (size_t c = 0; c < K; ++c) {
    const Piece x = piece(count, c, K);
    p.chunk({{at(send, x.lo * e), 0, x.n * e}},
            [n = x.n, dtype, op](comm::Communicator& h, char* slot) { h.all_reduce(slot, slot, n, dtype, op).wait(); },
            {{at(recv, x.lo * e), 0, x.n * e}}, stream);
  }
}

/// Reduce-scatter among the host's ranks over peer memory, each rank's share all-reduced with the
/// ranks of its place on the other hosts through the pipeline, all-gather among the host's ranks:
/// a rank copies and sends its share, not the whole buffer.
void two_level_all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype,
                          ReduceOp op, cudaStream_t stream) {
  DeviceCommunicatorImpl& local = *d.local_level;
  const size_t e = dtype_size(dtype), L = static_cast<size_t>(local.size), me = static_cast<size_t>(local.rank);
  const size_t V = 16 / e;  // shares start 16-byte aligned
  std::vector<size_t> shares(L);
  size_t lo = 0, mine_at = 0;
  for (size_t i = 0; i < L; ++i) {
    const size_t hi = i + 1 == L ? count : count * (i + 1) / L / V * V;
    shares[i] = hi - std::min(lo, hi);
    if (i == me) mine_at = lo;
    lo = std::max(lo, hi);
  }
  char* share = at(recv, mine_at * e);
  local.reduce_scatter_blocks(DeviceCall::reduce_scatterv, send, share, shares, dtype, op, stream);
  if (shares[me]) flat_all_reduce(*d.cross_pipeline, share, share, shares[me], dtype, op, stream);
  local.all_gather_blocks(DeviceCall::all_gatherv, share, recv, shares, dtype, stream);
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
  const size_t e = dtype_size(dtype), me = static_cast<size_t>(d.rank);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  // The same on every rank: a slot holds the chunk's blocks and the largest rank's piece.
  const size_t K = p.chunks_for((total + *std::max_element(counts.begin(), counts.end())) * e);
  p.begin_call(stream);
  std::vector<size_t> sub, from;
  for (size_t c = 0; c < K; ++c) {
    pieces_of(counts, c, K, sub, from);
    std::vector<Copy> in;
    size_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      in.push_back(Copy{at(send, from[r] * e), offset, sub[r] * e});
      offset += sub[r] * e;
    }
    const size_t out_at = up64(offset);
    p.chunk(in,
            [sub, out_at, dtype, op](comm::Communicator& h, char* slot) {
              h.reduce_scatterv(slot, slot + out_at, sub, dtype, op).wait();
            },
            {{at(recv, piece(counts[me], c, K).lo * e), out_at, sub[me] * e}}, stream);
  }
  SEAM_LOG_DEBUG("seam: device reduce_scatterv {} x {}: staged through host memory, {} chunk(s)", total,
                 dtype_name(dtype), K);
}

void all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                cudaStream_t stream, cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  const size_t e = dtype_size(dtype), me = static_cast<size_t>(d.rank);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  // The same on every rank: a slot holds the chunk's blocks and the largest rank's piece.
  const size_t K = p.chunks_for((total + *std::max_element(counts.begin(), counts.end())) * e);
  p.begin_call(stream);
  std::vector<size_t> sub, from;
  for (size_t c = 0; c < K; ++c) {
    pieces_of(counts, c, K, sub, from);
    std::vector<Copy> out;
    size_t offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      out.push_back(Copy{at(recv, from[r] * e), offset, sub[r] * e});
      offset += sub[r] * e;
    }
    const size_t mine_at = up64(offset);
    p.chunk({{at(send, piece(counts[me], c, K).lo * e), mine_at, sub[me] * e}},
            [sub, mine_at, dtype](comm::Communicator& h, char* slot) {
              h.all_gatherv(slot + mine_at, slot, sub, dtype).wait();
            },
            out, stream);
  }
  SEAM_LOG_DEBUG("seam: device all_gatherv {} x {}: staged through host memory, {} chunk(s)", total,
                 dtype_name(dtype), K);
}

void broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root, cudaStream_t stream,
               cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  const size_t e = dtype_size(dtype), K = p.chunks_for(count * e);
  const bool is_root = d.rank == root;
  p.begin_call(stream);
  for (size_t c = 0; c < K; ++c) {
    const Piece x = piece(count, c, K);
    const Copy whole{at(buffer, x.lo * e), 0, x.n * e};
    p.chunk(is_root ? std::vector<Copy>{whole} : std::vector<Copy>{},
            [n = x.n, dtype, root](comm::Communicator& h, char* slot) { h.broadcast(slot, n, dtype, root).wait(); },
            is_root ? std::vector<Copy>{} : std::vector<Copy>{whole}, stream);
  }
  SEAM_LOG_DEBUG("seam: device broadcast {} x {} from rank {}: staged through host memory, {} chunk(s)", count,
                 dtype_name(dtype), root, K);
}

void fused_norm(DeviceCommunicatorImpl& d, const Tensor& partial, const Tensor& residual,
                const kernels::RmsNormSpec& norm, const Tensor* out, const kernels::Fp8Rows* fp8_out,
                cudaStream_t stream, cudaStreamCaptureStatus capture) {
  // The partial's rows, packed into a device scratch, are all-reduced there; the norm reads them.
  pipeline(d, capture);
  const size_t e = dtype_size(partial.dtype);
  const size_t row = static_cast<size_t>(partial.cols) * e, rows = static_cast<size_t>(partial.rows);
  void* scratch = nullptr;
  check(cudaMallocAsync(&scratch, row * rows, stream), "scratch");
  check(cudaMemcpy2DAsync(scratch, row, partial.data, static_cast<size_t>(partial.row_stride) * e, row, rows,
                          cudaMemcpyDeviceToDevice, stream),
        "packing the partial");
  try {
    all_reduce(d, scratch, scratch, static_cast<size_t>(partial.numel()), partial.dtype, ReduceOp::sum, stream,
               capture);
  } catch (...) {
    cudaFreeAsync(scratch, stream);
    throw;
  }
  const Tensor sum{scratch, partial.dtype, partial.device, partial.rows, partial.cols, partial.cols};
  const cudaError_t launched = fp8_out ? kernels::cuda::add_rms_norm_fp8(sum, residual, nullptr, norm, *fp8_out, stream)
                                       : kernels::cuda::add_rms_norm(sum, residual, nullptr, norm, *out, stream);
  cudaFreeAsync(scratch, stream);
  check(launched, "the norm kernel");
}

}  // namespace seam::device::staged
