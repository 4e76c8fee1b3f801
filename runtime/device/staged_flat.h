// The staged path's calls on one StagedPipeline, each cut into chunks that go through pinned host
// memory and the host collectives on the pipeline's duplicate communicator: the flat calls of a
// staged communicator and the network level of the two-level ones. Ordered on the caller's stream.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <vector>

#include "runtime/device/staged_pipeline.h"
#include "seam/dtype.h"

namespace seam::device::staged {

/// Elements [lo, lo + n) of a buffer.
struct Piece {
  size_t lo, n;
};
/// Chunk c of K of `count`: the first count % K chunks one longer.
Piece piece(size_t count, size_t c, size_t K);
/// Each of L ranks' share of `count` elements of e bytes, every share 16-byte aligned.
std::vector<Piece> host_shares(size_t count, size_t L, size_t e);
/// `bytes` past p.
inline char* at(const void* p, size_t bytes) { return static_cast<char*>(const_cast<void*>(p)) + bytes; }
/// b rounded up to 64 bytes.
inline size_t up64(size_t b) { return (b + 63) / 64 * 64; }

/// The calls, with `rank` this rank's place in the pipeline's communicator. The block calls
/// return their number of chunks.
void flat_all_reduce(StagedPipeline& p, const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                     cudaStream_t stream);
size_t flat_reduce_scatter(StagedPipeline& p, size_t rank, const void* send, void* recv,
                           std::span<const size_t> counts, DType dtype, ReduceOp op, cudaStream_t stream);
size_t flat_all_gather(StagedPipeline& p, size_t rank, const void* send, void* recv, std::span<const size_t> counts,
                       DType dtype, cudaStream_t stream);
void flat_broadcast(StagedPipeline& p, bool is_root, int root, void* buffer, size_t count, DType dtype,
                    cudaStream_t stream);
/// Point to point with rank `peer` of the pipeline's communicator: each chunk travels with a
/// header (count, dtype, chunk) that the receiver checks, so that a send and a recv that disagree
/// fail on both ranks instead of delivering part of a message.
void flat_send(StagedPipeline& p, const void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream);
void flat_recv(StagedPipeline& p, void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream);

}  // namespace seam::device::staged
