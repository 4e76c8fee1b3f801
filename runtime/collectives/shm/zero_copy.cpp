#include <cstdint>
#include "runtime/collectives/shm/zero_copy.h"

#include <algorithm>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "layouts/log.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/shm/helped.h"
#include "runtime/collectives/scratch.h"
#include "runtime/collectives/shm/common.h"
#include "transports/shm/shared_host_memory.h"

namespace seam::collectives {
namespace {

/// Work moves in chunks of this size: a folded chunk sits in L2 while it is written into every
/// rank's output, a gathered one while it is written into every peer's.
constexpr size_t kChunkBytes = 64 * 1024;

/// Rank p's buffer named by word `which` of the exchange's round, mapped into this process.
char* peer_buffer(const ShmRegion& region, uint64_t round, int which, int p) {
  return static_cast<char*>(shm::map_shared_handle(region.pid_of(p), region.host_token_of(p),
                                                   region.word_of(p, round, which)));
}

/// Every rank's buffer named by word `which` of the exchange's round (this rank's own: `own`);
/// with `needed`, only those of the ranks p with needed[p] > 0 (the others null).
template <typename T>
std::vector<T*> peer_buffers(const ShmRegion& region, uint64_t round, int which, int me, T* own,
                             std::span<const size_t> needed = {}) {
  std::vector<T*> buffers(region.ranks());
  for (int p = 0; p < region.ranks(); ++p)
    if (needed.empty() || needed[p])
      buffers[p] = p == me ? own : peer_buffer(region, round, which, p);
  return buffers;
}

/// This rank's share of a call's blocks (offsets `off`): the part of each block j in it is
/// elements [first[j], first[j] + length[j]) of the whole range.
struct ShareParts {
  Blocks first, length;
};

/// Where every rank with a block announced a second buffer in the round (word 1: the outputs of a
/// reduce-scatter, the inputs of a gather), an even share of all blocks, so that the largest
/// block's owner no longer does most of the work; otherwise this rank's own block. All ranks see
/// the same announcements, so all agree.
ShareParts share_of(const ShmRegion& region, uint64_t round, std::string_view collective,
                    std::span<const size_t> off, int me) {
  const size_t n = off.size() - 1;
  bool even = true;
  for (size_t p = 0; p < n; ++p)
    even = even && (off[p + 1] == off[p] || region.word_of(static_cast<int>(p), round, 1) != 0);
  if (even) SEAM_LOG_DEBUG("{}: zero-copy, even shares of all blocks", collective);
  const auto shares =
      even ? block_offsets(even_blocks(off.back(), static_cast<int>(n))) : Blocks(off);
  ShareParts parts{Blocks(n), Blocks(n)};
  for (size_t j = 0; j < n; ++j) {
    parts.first[j] = std::clamp(off[j], shares[me], shares[me + 1]);
    parts.length[j] = std::clamp(off[j + 1], shares[me], shares[me + 1]) - parts.first[j];
  }
  return parts;
}

}  // namespace

comm::Task zero_copy_all_reduce(Group& g, ShmRegion& region, const char* send, char* recv,
                                ZeroCopyHandles handles, size_t count, DType dtype, ReduceOp op) {
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  BufferExchange exchange(g, region,
                          signature_of(Collective::all_reduce, dtype, op, count, ShmVariant::zero_copy),
                          "all_reduce");
  const Helpers helpers(region, count * es);
  exchange.announce(handles.send, handles.recv);
  co_await exchange.peers_ready();
  const auto sends = peer_buffers(region, exchange.round(), 0, me, send);
  const auto recvs = peer_buffers(region, exchange.round(), 1, me, recv);
  // This rank's share of every input is read by this rank alone and its share of every output
  // written by it alone, so in place is safe: each chunk is read from all before written to all
  // (into this rank's own recv, where results stream, a block at a time as it is folded).
  const auto shares = even_blocks(count, n);
  const auto at = block_offsets(shares);
  // In place, the fold has just read the lines it writes: cached stores.
  const kernels::Store store = copy_store_for(count * es, n, send == recv);
  const bool own_streamed = store == kernels::Store::streaming;
  const size_t chunk = kChunkBytes / es;
  // The helpers take runs of chunks, each with its own scratch.
  const auto fold_run = [&](size_t run_begin, size_t run_end) {
    Scratch folded(kChunkBytes);
    Sources sources(n);
    for (size_t begin = at[me] + run_begin; begin < at[me] + run_end; begin += chunk) {
      const size_t length = std::min(chunk, at[me] + run_end - begin);
      for (int p = 0; p < n; ++p) sources[p] = sends[p] + begin * es;
      if (own_streamed)
        kernels::reduce_and_keep(recvs[me] + begin * es, folded.data(), sources, length, dtype, op);
      else
        kernels::reduce(folded.data(), sources, length, dtype, op);
      for (int p : peers_from(me, n, !own_streamed))
        kernels::copy(recvs[p] + begin * es, folded.data(), length * es, store);
    }
  };
  helpers.split_runs(shares[me], chunk, kChunkBytes, fold_run, n);
  comm::Task finish = exchange.finish();
  co_await comm::run(finish);
}

comm::Task zero_copy_reduce_scatter(Group& g, ShmRegion& region, std::string_view collective,
                                    const char* send, char* out, ZeroCopyHandles handles,
                                    std::span<const size_t> counts, DType dtype, ReduceOp op) {
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  BufferExchange exchange(
      g, region,
      signature_of(Collective::reduce_scatterv, dtype, op, counts, ShmVariant::zero_copy),
      collective);
  const Helpers helpers(region, off.back() * es);
  exchange.announce(handles.send, handles.recv);
  co_await exchange.peers_ready();
  const auto sends = peer_buffers(region, exchange.round(), 0, me, send);
  const kernels::Store store = copy_store_for(off.back() * es, n, out == send + off[me] * es);
  // Where every output lies in SharedHostMemory too, each rank folds an even share of all the
  // blocks and writes it into their owners' outputs (8 ranks, blocks 1:2:...:8: the largest
  // one's owner folded 1.8x the average otherwise). The part of block j in this rank's share is
  // folded into `to[j]`: one hand-off to the helpers for all blocks.
  // Named references, not a structured binding: clang before 16 cannot capture one in a lambda.
  const ShareParts share = share_of(region, exchange.round(), collective, off, me);
  const Blocks &first = share.first, &length = share.length;
  const auto to = peer_buffers(region, exchange.round(), 1, me, out, length);
  const size_t chunk = kChunkBytes / es;
  helpers.split_pieces(length, es, [&](size_t j, size_t b, size_t e) {
    Sources sources(n);
    for (size_t begin = first[j] + b; begin < first[j] + e; begin += chunk) {
      const size_t count = std::min(chunk, first[j] + e - begin);
      for (int p = 0; p < n; ++p) sources[p] = sends[p] + begin * es;
      kernels::reduce(to[j] + (begin - off[j]) * es, sources, count, dtype, op, store);
    }
  }, n);
  comm::Task finish = exchange.finish();
  co_await comm::run(finish);
}

comm::Task zero_copy_all_gather(Group& g, ShmRegion& region, std::string_view collective,
                                const char* send, char* recv, ZeroCopyHandles handles,
                                std::span<const size_t> counts, DType dtype) {
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  BufferExchange exchange(
      g, region,
      signature_of(Collective::all_gatherv, dtype, ReduceOp::sum, counts, ShmVariant::zero_copy),
      collective);
  const Helpers helpers(region, off.back() * es);
  exchange.announce(handles.recv, handles.send);
  co_await exchange.peers_ready();
  const auto recvs = peer_buffers(region, exchange.round(), 0, me, recv);
  const kernels::Store store = copy_store_for(off.back() * es, n, false);
  // Where every block's input lies in SharedHostMemory too, each rank writes an even share of the
  // result, read from the blocks' owners' inputs (`from`), into every output: the largest
  // block's owner (a broadcast's root) no longer writes most of the data. Otherwise each rank's
  // share is its own block, from its own input.
  // Named references, not a structured binding: clang before 16 cannot capture one in a lambda.
  const ShareParts share = share_of(region, exchange.round(), collective, off, me);
  const Blocks &first = share.first, &length = share.length;
  const auto from = peer_buffers(region, exchange.round(), 1, me, send, length);
  const size_t chunk = kChunkBytes / es;
  helpers.split_pieces(
      length, es,
      [&](size_t j, size_t b, size_t e) {
        for (size_t begin = first[j] + b; begin < first[j] + e; begin += chunk) {
          const size_t bytes = std::min(chunk, first[j] + e - begin) * es;
          const char* source = from[j] + (begin - off[j]) * es;
          for (int p : peers_from(me, n, true)) {
            char* to = recvs[p] + begin * es;
            if (to != source) kernels::copy(to, source, bytes, store);  // in place: already there
          }
        }
      },
      n);
  comm::Task finish = exchange.finish();
  co_await comm::run(finish);
}

}  // namespace seam::collectives
