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

/// Chunk c of K of a call with one block per rank: each rank's piece of its block, packed in rank
/// order at the slot's start (`blocks`: the copies between them and the device buffer), and the
/// 64-byte aligned offset after them.
struct BlockChunk {
  std::vector<size_t> counts;
  std::vector<Copy> blocks;
  size_t after = 0;
};
BlockChunk block_chunk(const void* buffer, std::span<const size_t> counts, size_t c, size_t K, size_t e) {
  BlockChunk b;
  size_t block_at = 0, offset = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const Piece p = piece(counts[r], c, K);
    b.counts.push_back(p.n);
    b.blocks.push_back(Copy{at(buffer, (block_at + p.lo) * e), offset, p.n * e});
    block_at += counts[r];
    offset += p.n * e;
  }
  b.after = up64(offset);
  return b;
}

/// Chunks of a call with one block per rank, the same on every rank: a slot holds a chunk's pieces
/// and then the largest rank's piece.
size_t block_chunks(const StagedPipeline& p, std::span<const size_t> counts, size_t e) {
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  return p.chunks_for((total + *std::max_element(counts.begin(), counts.end())) * e);
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
  p.end_call(stream);
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

namespace {

/// A call with one block per rank, chunk by chunk: each chunk's pieces of `blocks` (a
/// reduce-scatter's input, a gather's output) packed at the slot's start, this rank's piece of
/// `mine` (its output, its input) after them. `step(pieces' counts, where mine sits)` makes the
/// chunk's host collective. Returns the number of chunks.
template <class Step>
size_t block_call(StagedPipeline& p, size_t rank, std::span<const size_t> counts, size_t e, const void* blocks,
                  const void* mine, bool blocks_to_host, Step step, cudaStream_t stream) {
  const size_t K = block_chunks(p, counts, e);
  p.begin_call(stream);
  for (size_t c = 0; c < K; ++c) {
    BlockChunk b = block_chunk(blocks, counts, c, K, e);
    const std::vector<Copy> piece_of_mine{{at(mine, piece(counts[rank], c, K).lo * e), b.after, b.counts[rank] * e}};
    p.chunk(blocks_to_host ? b.blocks : piece_of_mine, step(std::move(b.counts), b.after),
            blocks_to_host ? piece_of_mine : b.blocks, stream);
  }
  p.end_call(stream);
  return K;
}

}  // namespace

void reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                    DType dtype, ReduceOp op, cudaStream_t stream, cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  const size_t K = block_call(
      p, static_cast<size_t>(d.rank), counts, dtype_size(dtype), send, recv, true,
      [dtype, op](std::vector<size_t> sub, size_t out_at) -> StagedPipeline::HostStep {
        return [sub = std::move(sub), out_at, dtype, op](comm::Communicator& h, char* slot) {
          h.reduce_scatterv(slot, slot + out_at, sub, dtype, op).wait();
        };
      },
      stream);
  SEAM_LOG_DEBUG("seam: device reduce_scatterv of {} blocks x {}: staged through host memory, {} chunk(s)",
                 counts.size(), dtype_name(dtype), K);
}

void all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                cudaStream_t stream, cudaStreamCaptureStatus capture) {
  StagedPipeline& p = pipeline(d, capture);
  const size_t K = block_call(
      p, static_cast<size_t>(d.rank), counts, dtype_size(dtype), recv, send, false,
      [dtype](std::vector<size_t> sub, size_t mine_at) -> StagedPipeline::HostStep {
        return [sub = std::move(sub), mine_at, dtype](comm::Communicator& h, char* slot) {
          h.all_gatherv(slot + mine_at, slot, sub, dtype).wait();
        };
      },
      stream);
  SEAM_LOG_DEBUG("seam: device all_gatherv of {} blocks x {}: staged through host memory, {} chunk(s)",
                 counts.size(), dtype_name(dtype), K);
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
  p.end_call(stream);
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
  // A failure here aborts the communicator (check_launch): the other ranks' chunks run anyway.
  const DeviceCall call = fp8_out ? DeviceCall::fused_norm_fp8 : DeviceCall::fused_norm;
  void* scratch = nullptr;
  d.check_launch(cudaMallocAsync(&scratch, row * rows, stream), call);
  try {
    d.check_launch(cudaMemcpy2DAsync(scratch, row, partial.data, static_cast<size_t>(partial.row_stride) * e, row,
                                     rows, cudaMemcpyDeviceToDevice, stream),
                   call);
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
  d.check_launch(launched, call);
}

}  // namespace seam::device::staged
