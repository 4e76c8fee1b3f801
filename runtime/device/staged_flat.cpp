#include "runtime/device/staged_flat.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "seam/errors.h"

namespace seam::device::staged {

using Copy = StagedPipeline::Copy;

Piece piece(size_t count, size_t c, size_t K) {
  const size_t base = count / K, extra = count % K;
  return Piece{c * base + std::min(c, extra), base + (c < extra ? 1 : 0)};
}

namespace {

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

std::vector<Piece> host_shares(size_t count, size_t L, size_t e) {
  const size_t V = std::max<size_t>(1, 16 / e);
  std::vector<Piece> shares(L);
  size_t lo = 0;
  for (size_t i = 0; i < L; ++i) {
    const size_t hi = std::max(lo, i + 1 == L ? count : count * (i + 1) / L / V * V);
    shares[i] = Piece{lo, hi - lo};
    lo = hi;
  }
  return shares;
}

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

void flat_broadcast(StagedPipeline& p, bool is_root, int root, void* buffer, size_t count, DType dtype,
                    cudaStream_t stream) {
  const size_t e = dtype_size(dtype), K = p.chunks_for(count * e);
  p.begin_call(stream);
  for (size_t c = 0; c < K; ++c) {
    const Piece x = piece(count, c, K);
    const Copy whole{at(buffer, x.lo * e), 0, x.n * e};
    p.chunk(is_root ? std::vector<Copy>{whole} : std::vector<Copy>{},
            [n = x.n, dtype, root](comm::Communicator& h, char* slot) { h.broadcast(slot, n, dtype, root).wait(); },
            is_root ? std::vector<Copy>{} : std::vector<Copy>{whole}, stream);
  }
  p.end_call(stream);
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

size_t flat_reduce_scatter(StagedPipeline& p, size_t rank, const void* send, void* recv,
                               std::span<const size_t> counts, DType dtype, ReduceOp op, cudaStream_t stream) {
  return block_call(
      p, rank, counts, dtype_size(dtype), send, recv, true,
      [dtype, op](std::vector<size_t> sub, size_t out_at) -> StagedPipeline::HostStep {
        return [sub = std::move(sub), out_at, dtype, op](comm::Communicator& h, char* slot) {
          h.reduce_scatterv(slot, slot + out_at, sub, dtype, op).wait();
        };
      },
      stream);
}

size_t flat_all_gather(StagedPipeline& p, size_t rank, const void* send, void* recv,
                           std::span<const size_t> counts, DType dtype, cudaStream_t stream) {
  return block_call(
      p, rank, counts, dtype_size(dtype), recv, send, false,
      [dtype](std::vector<size_t> sub, size_t mine_at) -> StagedPipeline::HostStep {
        return [sub = std::move(sub), mine_at, dtype](comm::Communicator& h, char* slot) {
          h.all_gatherv(slot + mine_at, slot, sub, dtype).wait();
        };
      },
      stream);
}

namespace {

/// What every chunk of a point-to-point call carries ahead of its data.
struct P2pHeader {
  uint64_t magic;
  uint64_t count;
  uint64_t chunk;
  uint32_t dtype;
  uint32_t pad;
};
constexpr uint64_t kP2pMagic = 0x5345414d50325031ull;  // "SEAMP2P1"
constexpr size_t kHeaderBytes = 64;

std::string describe(const P2pHeader& h) {
  return std::to_string(h.count) + " x " + std::string(dtype_name(static_cast<DType>(h.dtype)));
}

}  // namespace

void flat_send(StagedPipeline& p, const void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream) {
  const size_t e = dtype_size(dtype), K = p.chunks_for(count * e);
  p.begin_call(stream);
  for (size_t c = 0; c < K; ++c) {
    const Piece x = piece(count, c, K);
    const P2pHeader h{kP2pMagic, count, c, static_cast<uint32_t>(dtype), 0};
    p.chunk({{at(buffer, x.lo * e), kHeaderBytes, x.n * e}},
            [h, bytes = kHeaderBytes + x.n * e, peer](comm::Communicator& host, char* slot) {
              std::memcpy(slot, &h, sizeof h);
              host.send(slot, bytes, peer).wait();
            },
            {}, stream);
  }
  p.end_call(stream);
}

void flat_recv(StagedPipeline& p, void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream) {
  const size_t e = dtype_size(dtype), K = p.chunks_for(count * e);
  p.begin_call(stream);
  for (size_t c = 0; c < K; ++c) {
    const Piece x = piece(count, c, K);
    const P2pHeader want{kP2pMagic, count, c, static_cast<uint32_t>(dtype), 0};
    p.chunk({},
            [want, bytes = kHeaderBytes + x.n * e, peer](comm::Communicator& host, char* slot) {
              P2pHeader got{};
              std::memset(slot, 0, sizeof got);
              host.recv(slot, bytes, peer).wait();
              std::memcpy(&got, slot, sizeof got);
              if (got.magic != want.magic || got.count != want.count || got.dtype != want.dtype ||
                  got.chunk != want.chunk)
                throw ValueError("seam: device recv of " + describe(want) + " from rank " + std::to_string(peer) +
                                 ": the peer sent " + (got.magic == kP2pMagic ? describe(got) : "something else") +
                                 " (a send and its recv must agree on count and dtype)");
            },
            {{at(buffer, x.lo * e), kHeaderBytes, x.n * e}}, stream);
  }
  p.end_call(stream);
}

}  // namespace seam::device::staged
