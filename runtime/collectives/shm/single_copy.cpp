// Single-copy schedules: where the ranks may read and write each other's memory (Linux
// cross-memory attach, process_vm_readv/_writev; ShmRegion::single_copy), each rank reads the
// peers' user buffers directly and writes into them what it folded or, at two ranks, its block of
// a gather: no slots, each byte copied once by the kernel, which pins the peers' pages as it
// copies. Every rank announces its buffers, works, and returns once every peer has read from it
// and written into it (BufferExchange).
#include "runtime/collectives/shm/single_copy.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <functional>

#include "kernels/reduce/reduce.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/shm/helped.h"
#include "runtime/collectives/scratch.h"
#include "runtime/collectives/shm/common.h"

namespace seam::collectives {
namespace {

/// Single-copy calls cut their copies at whole pages: the kernel pins a page at a time.
constexpr size_t kPageBytes = 4096;

/// Single-copy reads move this much per peer and call, so that the peers' pieces of one chunk
/// (and a folded chunk's copy) sit in L2 when the fold reads them: 256 KiB at 2 ranks, 64 KiB
/// from 5. Smaller chunks cost more kernel calls for the same bytes; larger ones leave L2.
size_t single_copy_chunk_bytes(int ranks) {
  constexpr size_t kPerCall = 256 * 1024, kLeast = 64 * 1024;
  return std::max(kLeast, kPerCall / static_cast<size_t>(ranks - 1) / kPageBytes * kPageBytes);
}

/// Whether single-copy calls of uneven blocks even out the ranks' copies (a two-rank gather split
/// by pushed_bytes, a reduce-scatter folding even shares): with SEAM_SHM_SCHEDULE, only where it
/// says single-copy-balanced; else where every rank has a core and at most one helper (the
/// helpers configured for the region, not those of the call, which stand down while the host
/// steals; the choice is in the call's signature, so ranks configured apart fail with a
/// MismatchError). A rank with more helpers copies at what the memory system gives whatever its
/// share, and the writes into the peers' buffers that balancing adds cost more than the wait for
/// the largest block.
bool balances_single_copy(const ShmRegion& region) {
  const std::string& forced = region.config().schedule;
  if (!forced.empty()) return forced == shm_variant_name(ShmVariant::single_copy_balanced);
  return !region.oversubscribed() && region.helper_threads() <= 1;
}

/// Whether blocks differ in size.
bool uneven(std::span<const size_t> counts) {
  return std::any_of(counts.begin(), counts.end(), [&](size_t c) { return c != counts[0]; });
}

}  // namespace

bool single_copy_folds_even_shares(const ShmRegion& region, std::span<const size_t> counts) {
  return uneven(counts) && balances_single_copy(region);
}

bool single_copy_splits_blocks(const ShmRegion& region, std::span<const size_t> counts) {
  return counts.size() == 2 && counts[0] && counts[1] && uneven(counts) &&
         balances_single_copy(region);
}

/// The signature's variant of a single-copy call, `balanced` or not.
ShmVariant single_copy_variant(bool balanced) {
  return balanced ? ShmVariant::single_copy_balanced : ShmVariant::single_copy;
}

namespace {

/// What fold_from_peers does with each folded chunk while it is in cache: `folded` holds the
/// result of elements [begin, begin + length) of the fold.
using FoldedChunk = std::function<void(const char* folded, size_t begin, size_t length)>;

/// dst[0, count) = op over ranks of their buffers at element `first`, in rank order: this
/// rank's from `own`, every peer's read from the address it published with `round`, a chunk
/// at a time into a cache-resident scratch, then folded in one pass. Where the store is cached
/// and dst shares no byte with this rank's input (own's elements [first, first + count): out of
/// place), the first peer's chunk is read into dst itself instead and folded over there: the
/// kernel's copy writes whole lines, where the fold's stores into dst would first read each line.
/// With `then`, each chunk is handed to it in cache: a streaming fold into dst would leave it in
/// memory only, so the chunk is folded into the scratch too, each block streamed to dst from there
/// while in L1; without dst, into the scratch alone. The helpers take runs of chunks (each with its
/// scratch), `then` included.
void fold_from_peers(const ShmRegion& region, uint64_t round, int me, const char* own, char* dst,
                     size_t first, size_t count, DType dtype, ReduceOp op, kernels::Store store,
                     const Helpers& helpers, const FoldedChunk& then = {}) {
  const int n = region.ranks();
  const size_t es = dtype_size(dtype);
  const size_t chunk_bytes = single_copy_chunk_bytes(n);
  const size_t chunk = chunk_bytes / es;
  assert(dst || then);  // without dst, the folded chunks go to `then` alone
  const bool fold_in_scratch = then && (store == kernels::Store::streaming || !dst);
  // Addresses as integers: the buffers are separate objects, which pointers may not compare.
  const auto address = [](const char* p) { return reinterpret_cast<uintptr_t>(p); };
  const uintptr_t own_begin = address(own + first * es), dst_begin = address(dst);
  const uintptr_t bytes = count * es;
  const bool apart = dst && (dst_begin + bytes <= own_begin || own_begin + bytes <= dst_begin);
  const int into_dst = store == kernels::Store::cached && apart ? (me == 0 ? 1 : 0) : -1;
  // Scratch chunks: one per peer read there (all but into_dst, the lowest), then the folded one.
  const int read_into_scratch = n - 1 - (into_dst >= 0 ? 1 : 0);
  auto fold_run = [&](size_t run_begin, size_t run_end) {
    Scratch scratch((read_into_scratch + (fold_in_scratch ? 1 : 0)) * chunk_bytes);
    char* folded_chunk = scratch.data() + read_into_scratch * chunk_bytes;
    Sources sources(n);
    for (size_t begin = run_begin; begin < run_end; begin += chunk) {
      const size_t length = std::min(chunk, run_end - begin);
      for (int p = 0; p < n; ++p) {
        if (p == me) {
          sources[p] = own + (first + begin) * es;
          continue;
        }
        const int slot = (p < me ? p : p - 1) - (into_dst >= 0 ? 1 : 0);
        char* piece = p == into_dst ? dst + begin * es : scratch.data() + slot * chunk_bytes;
        region.read_from(
            p, static_cast<const char*>(region.buffer_of(p, round)) + (first + begin) * es, piece,
            length * es);
        sources[p] = piece;
      }
      if (!fold_in_scratch) {
        kernels::reduce(dst + begin * es, sources, length, dtype, op, store);
        if (then) then(dst + begin * es, begin, length);
        continue;
      }
      if (dst)
        kernels::reduce_and_keep(dst + begin * es, folded_chunk, sources, length, dtype, op);
      else
        kernels::reduce(folded_chunk, sources, length, dtype, op, kernels::Store::cached);
      then(folded_chunk, begin, length);
    }
  };
  helpers.split_runs(count, chunk, chunk_bytes, fold_run, n);
}

/// The stores of a single-copy all-reduce's own share of the result: store_for's, counting the
/// send and recv buffers both, which an out-of-place call walks together; so 2-rank results stay
/// cached up to 16 MiB and stream from 32 MiB (with 32 MiB of last-level cache or more).
/// Streaming as soon as a share leaves L2 loses while the buffers still fit the last level.
kernels::Store single_copy_result_store(size_t bytes, int ranks, bool in_place) {
  return store_for(2 * bytes, ranks, in_place);
}

}  // namespace

/// Single-copy all-reduce in shares: every rank publishes its send and recv buffers, folds its
/// share (1/n) of all ranks' inputs into its recv a chunk at a time, and writes each folded
/// chunk into every peer's recv while it is in cache; a rank returns once every peer has read
/// from it and written to it: one wait, where reading the peers' reduced shares would take two.
comm::Task single_copy_all_reduce(Group& g, RegionLease& region, const char* send, char* recv,
                                  size_t count, DType dtype, ReduceOp op, CallSignature signature) {
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto shares = even_blocks(count, n);
  const auto at = block_offsets(shares);
  const Helpers helpers(*region, count * es);
  BufferExchange exchange(g, *region, signature, "all_reduce");
  exchange.announce(reinterpret_cast<uint64_t>(send), reinterpret_cast<uint64_t>(recv));
  co_await exchange.peers_ready();
  const uint64_t round = exchange.round();
  auto write_to_peers = [&](const char* folded, size_t begin, size_t length) {
    for (int p : peers_from(me, n, false))
      region->write_to(p, region->target_of(p, round) + (at[me] + begin) * es, folded, length * es);
  };
  // In place, only peer p reads or writes share p of this rank's buffer, each chunk read before
  // it is written.
  const std::exception_ptr failure = failure_of([&] {
    fold_from_peers(*region, round, me, send, recv + at[me] * es, at[me], shares[me], dtype, op,
                    single_copy_result_store(count * es, n, send == recv), helpers, write_to_peers);
  });
  comm::Task finish = exchange.finish(failure);
  co_await comm::run(finish);
}

/// Single-copy reduce-scatter: every rank publishes its send buffer and folds its block out of
/// all ranks' buffers into out. Uneven blocks are folded in even shares instead where
/// balances_single_copy (however little they differ; the slots balance only from kUnevenBlocks, as
/// it costs them a second wait a round): a rank folds the part of its share in its
/// own block into out and writes each folded chunk of another block into that block's owner's
/// out while in cache, so that no rank waits for the largest block's owner (the balance costs no
/// wait here). A rank returns once every peer has read from it (and written into it). In place,
/// out is this rank's own block of send; only the rank whose share holds an element reads and
/// writes it, a chunk read before it is written.
comm::Task single_copy_reduce_scatter(Group& g, RegionLease& region, std::string_view collective,
                                      const char* send, char* out, std::span<const size_t> counts,
                                      DType dtype, ReduceOp op, bool balanced,
                                      CallSignature signature) {
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  const auto at = balanced ? block_offsets(even_blocks(off.back(), n)) : off;
  const Helpers helpers(*region, off.back() * es);
  BufferExchange exchange(g, *region, signature, collective);
  exchange.announce(reinterpret_cast<uint64_t>(send),
                    balanced ? reinterpret_cast<uint64_t>(out) : 0);
  co_await exchange.peers_ready();
  const uint64_t round = exchange.round();
  const kernels::Store store = store_for(off.back() * es, n, out == send + off[me] * es);
  const std::exception_ptr failure = failure_of([&] {
    for (int j = 0; j < n; ++j) {  // the part of block j in this rank's share
      const size_t first = std::max(at[me], off[j]), last = std::min(at[me + 1], off[j + 1]);
      if (first >= last) continue;
      if (j == me) {
        fold_from_peers(*region, round, me, send, out + (first - off[me]) * es, first, last - first,
                        dtype, op, store, helpers);
        continue;
      }
      char* owner_out = region->target_of(j, round) + (first - off[j]) * es;
      fold_from_peers(*region, round, me, send, nullptr, first, last - first, dtype, op, store,
                      helpers, [&](const char* folded, size_t begin, size_t length) {
                        region->write_to(j, owner_out + begin * es, folded, length * es);
                      });
    }
  });
  comm::Task finish = exchange.finish(failure);
  co_await comm::run(finish);
}

namespace {

/// Writes `bytes` of this rank's block (from `send`, at `offset` in a recv) into every peer's
/// recv a chunk at a time, right after copying the chunk into its own recv (`own`, out of
/// place), so that the chunk is read from memory once.
void push_own_block(const ShmRegion& region, uint64_t round, int me, const char* send, char* own,
                    size_t offset, size_t bytes, kernels::Store store, const Helpers& helpers) {
  const size_t chunk = single_copy_chunk_bytes(region.ranks());
  helpers.split_runs(
      bytes, chunk, chunk,
      [&](size_t run_begin, size_t run_end) {
        for (size_t begin = run_begin; begin < run_end; begin += chunk) {
          const size_t length = std::min(chunk, run_end - begin);
          if (own != send) kernels::copy(own + begin, send + begin, length, store);
          for (int p : peers_from(me, region.ranks(), false))
            region.write_to(p, region.target_of(p, round) + offset + begin, send + begin, length);
        }
      },
      region.ranks());
}

/// The rank whose block is the only one with elements (a broadcast's root), or -1.
int sole_block(std::span<const size_t> counts) {
  int owner = -1;
  for (size_t p = 0; p < counts.size(); ++p) {
    if (!counts[p]) continue;
    if (owner >= 0) return -1;
    owner = static_cast<int>(p);
  }
  return owner;
}

/// The bytes at the end of rank p's block that p writes into its peers' recvs; the peers read
/// the rest of it. Two ranks with even blocks write them whole. Two uneven ones, both with
/// elements, are `split`: the smaller block's owner writes it whole and reads part of the larger
/// one, whose owner copies more into its own recv out of place (in place, half would even the
/// ranks out; a rank does not know whether its peer calls in place): three quarters of the
/// difference, as a kernel copy costs about twice a streaming one, whole pages. A sole block (a
/// broadcast's root, which copies nothing into its own recv) is split too, its owner writing its
/// last 1/n. Otherwise each rank reads the others' blocks.
size_t pushed_bytes(std::span<const size_t> counts, size_t es, int p, bool split) {
  const size_t mine = counts[p] * es;
  if (split) {
    const size_t other = counts[1 - p] * es;
    if (mine < other) return mine;
    return mine - std::min(mine, ceil_div((mine - other) / 4 * 3, kPageBytes) * kPageBytes);
  }
  if (counts.size() == 2 && counts[0] == counts[1]) return mine;
  return p == sole_block(counts) ? mine / counts.size() / kPageBytes * kPageBytes : 0;
}

}  // namespace

/// Single-copy gather: every rank writes the end of its block into every peer's recv
/// (push_own_block) and reads the rest of the peers' blocks into place (pushed_bytes says where
/// they split). Writing reads the source once for the own copy and all peers; reading keeps
/// uneven blocks balanced at more ranks (each rank moves a whole result), where it wins. A rank
/// returns once every peer has read from it or written to it.
comm::Task single_copy_all_gather(Group& g, RegionLease& region, std::string_view collective,
                                  const char* send, char* recv, std::span<const size_t> counts,
                                  DType dtype, bool split, CallSignature signature) {
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  Blocks pushed(n), read(n);  // the bytes of each rank's block that it writes, and that peers read
  for (int p = 0; p < n; ++p) {
    pushed[p] = pushed_bytes(counts, es, p, split);
    read[p] = counts[p] * es - pushed[p];
  }
  const bool written_into =
      std::any_of(pushed.begin(), pushed.end(), [](size_t b) { return b > 0; });
  BufferExchange exchange(g, *region, signature, collective);
  exchange.announce(read[me] ? reinterpret_cast<uint64_t>(send) : 0,
                    written_into ? reinterpret_cast<uint64_t>(recv) : 0);
  char* own = recv + off[me] * es;
  const kernels::Store store = copy_store_for(off.back() * es, n, false);
  const Helpers helpers(*region, off.back() * es);
  if (own != send && read[me]) helpers.copy(own, send, read[me], store);
  co_await exchange.peers_ready();
  const std::exception_ptr failure = failure_of([&] {
    if (pushed[me])
      push_own_block(*region, exchange.round(), me, send + read[me], own + read[me],
                     off[me] * es + read[me], pushed[me], store, helpers);
    Blocks bytes(n);  // what to read from each peer (none from this rank)
    for (int p : peers_from(me, n, false)) bytes[p] = read[p];
    helpers.split_pieces(bytes, 1, [&](size_t p, size_t begin, size_t end) {
      const int peer = static_cast<int>(p);
      const char* block = static_cast<const char*>(region->buffer_of(peer, exchange.round()));
      region->read_from(peer, block + begin, recv + off[p] * es + begin, end - begin);
    });
  });
  comm::Task finish = exchange.finish(failure);
  co_await comm::run(finish);
}

}  // namespace seam::collectives
