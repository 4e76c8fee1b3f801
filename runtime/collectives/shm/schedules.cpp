// Reductions and gathers straight out of shared memory (see shm/region.h), and the choice of
// schedule per call. Every rank copies its contribution for a round into its slot, publishes the
// round, and once every peer has, reads the peers' slots directly: a reduction folds all ranks'
// pieces in rank order in one pass (one rounding for half types, the same bits on every rank), a
// gather copies them into place. Rounds are sized to the slot (SEAM_CHUNK_BYTES), so a round's
// data stays in cache between the copy-in and the reads. Large calls skip the slots where the
// ranks may read each other's memory and that measured faster (shm/single_copy.h; see
// choose_schedule and shm/tuner.h), and calls on SharedHostMemory take shm/zero_copy.h.
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/reduce/reduce.h"
#include "layouts/log.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/shm/helped.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/shm/common.h"
#include "runtime/collectives/shm/single_copy.h"
#include "runtime/collectives/shm/tuner.h"
#include "runtime/collectives/shm/zero_copy.h"
#include "transports/shm/shared_host_memory.h"

namespace seam::collectives {
namespace {

using Kind = ScheduleTuner::Kind;
using Schedule = ScheduleTuner::Schedule;

/// The largest all-reduce through the slots that every rank folds whole rather than in shares:
/// shares pay a second wait per round, the whole buffer costs each rank a read of every rank's
/// slot, which grows with the ranks. So the whole fold pays only for small calls, the fewer the
/// ranks the larger, and not at all past four ranks.
size_t whole_fold_bytes(int ranks) {
  if (ranks == 2) return 32 * 1024;
  return ranks <= 4 ? 4 * 1024 : 0;
}

/// Whether an all-reduce of `bytes` among `ranks` through the slots folds in shares, unless the
/// tuner chose each rank folding the whole buffer: always where SEAM_SHM_SCHEDULE pins the
/// slots, else past whole_fold_bytes of the region's ranks.
bool all_reduce_in_shares(const ShmRegion& region, size_t bytes, Schedule chosen) {
  if (chosen == Schedule::slots_whole) return false;
  return !region.config().schedule.empty() || bytes > whole_fold_bytes(region.ranks());
}

/// Calls from this size whose buffers lie in SharedHostMemory take the zero-copy schedules;
/// below, the slots' one wait beats their two.
constexpr size_t kZeroCopyBytes = 16 * 1024;

/// This rank's handle for the `bytes` at `data` when a call of `call_bytes` may go zero-copy.
uint64_t zero_copy_handle(const void* data, size_t bytes, size_t call_bytes) {
  return call_bytes >= kZeroCopyBytes ? shm::shared_handle_of(data, bytes) : 0;
}

/// Where the region prefers single-copy reads (a fast kernel copy), the tuner falls back on them,
/// and keeps them unless the slots measured faster by its margin, for calls from this size:
/// gathers at any rank count, reductions at two ranks.
constexpr size_t kSingleCopyBytes = size_t{1} << 20;

/// The same for reductions at more than two ranks, each with a core (where ranks outnumber
/// cores the slots win). The tuner's short blocks of calls time single-copy slower than it runs
/// in a row, so a slots fallback would keep the slots where they lose.
constexpr size_t kSingleCopyReductionBytes = size_t{4} << 20;

/// The schedule for a call of `bytes` on plain buffers: whichever the region's tuner measured
/// fastest among those this group can run. The slot schedules always (the slots; at two ranks
/// for all-reduces also the slots folding the whole buffer); single-copy where the ranks may read
/// each other's memory, unless SEAM_SHM_SINGLE_COPY_BYTES pins it: 0 never, N from N bytes on.
/// SEAM_SHM_SCHEDULE pins one schedule for every call.
///
/// Where the ranks outnumber their cores, gathers from kSingleCopyBytes take single-copy
/// without a measurement, up to where the slots' results would stream (store_for): ranks take
/// turns on the cores, so the bytes copied set the time, and single-copy copies each byte once
/// where the slots copy it twice. The tuner's blocks of calls cannot tell: the slots' first
/// calls in a row are fast, and it would choose them where they then run slow. Past the cache
/// the slots' streaming stores win, as the kernel's copy reads every destination line first.
ScheduleTuner::Choice choose_schedule(ShmRegion& region, Kind kind, size_t bytes) {
  ScheduleTuner::Choice pinned;  // the slots
  if (const std::string& forced = region.config().schedule; !forced.empty()) {  // SEAM_SHM_SCHEDULE
    if (forced == shm_variant_name(Schedule::slots_whole) && kind == Kind::all_reduce)
      pinned.schedule = Schedule::slots_whole;
    const bool single_copy = forced == shm_variant_name(Schedule::single_copy) ||
                             forced == shm_variant_name(ShmVariant::single_copy_balanced);
    if (single_copy && region.single_copy()) pinned.schedule = Schedule::single_copy;
    return pinned;
  }
  const int64_t setting = region.config().single_copy_bytes;
  if (region.single_copy() && setting > 0 && bytes >= static_cast<size_t>(setting)) {
    pinned.schedule = Schedule::single_copy;
    return pinned;
  }
  const bool single_copy = region.single_copy() && setting < 0;  // a candidate
  if (single_copy && region.single_copy_preferred() && region.oversubscribed() &&
      kind == Kind::all_gather && bytes >= kSingleCopyBytes &&
      store_for(bytes, region.ranks(), false) == kernels::Store::cached) {
    SEAM_LOG_DEBUG("all_gather: more ranks than cores: single-copy untuned ({} B)", bytes);
    pinned.schedule = Schedule::single_copy;
    return pinned;
  }
  Schedule candidates[ScheduleTuner::kSchedules] = {Schedule::slots};
  size_t count = 1;
  if (kind == Kind::all_reduce && region.ranks() == 2) candidates[count++] = Schedule::slots_whole;
  if (single_copy) candidates[count++] = Schedule::single_copy;
  const bool gather = kind == Kind::all_gather || kind == Kind::broadcast;
  const bool single_copy_first = single_copy && region.single_copy_preferred() &&
                                 ((bytes >= kSingleCopyBytes && (gather || region.ranks() == 2)) ||
                                  (bytes >= kSingleCopyReductionBytes && !region.oversubscribed()));
  return region.tuner().choose(kind, bytes, std::span(candidates, count),
                               single_copy_first ? Schedule::single_copy : Schedule::slots);
}

/// Reduce-scatters through the slots fold even shares of every round's pieces, not each rank its
/// own block, when the largest block is this many times the average or more: its owner would
/// otherwise fold that much more than the others, who wait for it. Balancing costs a second wait
/// per round and a copy of the parts of each block that other ranks folded.
constexpr double kUnevenBlocks = 1.5;

/// Whether a reduce-scatter of these blocks through the slots folds even shares: only when
/// SEAM_SHM_SCHEDULE says slots-balanced if it is set, else by kUnevenBlocks, and never where
/// the ranks outnumber their cores: they take turns on the cores, so no rank waits for the
/// largest block's owner while it folds, and the second wait costs a turn. (The tuner times
/// either as "the slots": a size class's calls of even and uneven blocks share its samples.)
bool folds_even_shares(const ShmRegion& region, std::span<const size_t> counts) {
  const std::string& forced = region.config().schedule;
  if (!forced.empty()) return forced == shm_variant_name(Schedule::slots_balanced);
  if (region.oversubscribed()) return false;
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  const size_t largest = *std::max_element(counts.begin(), counts.end());
  return total > 0 && static_cast<double>(largest) * static_cast<double>(counts.size()) >=
                          kUnevenBlocks * static_cast<double>(total);
}

/// Block j is cut into `rounds` pieces of `piece[j]` elements (the last ones shorter or empty).
struct Pieces {
  Blocks piece;
  size_t length(size_t count, size_t j, uint64_t k) const {
    size_t begin = k * piece[j];
    return begin >= count ? 0 : std::min(piece[j], count - begin);
  }
};

Pieces cut(std::span<const size_t> counts, uint64_t rounds) {
  Pieces p{Blocks(counts.size())};
  for (size_t j = 0; j < counts.size(); ++j) p.piece[j] = ceil_div(counts[j], rounds);
  return p;
}

/// A phase's copies, handed to the helpers at once (unused entries copy nothing; in place up to
/// 16 entries).
using Copies = InlineVector<Helpers::Copy, 16>;

}  // namespace

comm::Task shm_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                          ReduceOp op) {
  g.compares_arguments();  // the region's call signatures
  RegionLease region;
  co_await take_region(g, region);
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const ZeroCopyHandles handles{zero_copy_handle(send, count * es, count * es),
                                zero_copy_handle(recv, count * es, count * es)};
  if (handles.send && handles.recv) {
    SEAM_LOG_DEBUG("all_reduce: shm schedule zero-copy ({} B in SharedHostMemory)", count * es);
    comm::Task reduce = zero_copy_all_reduce(g, *region, send, recv, handles, count, dtype, op);
    co_await comm::run(reduce);
    region.finish();
    co_return;
  }
  const ScheduleTuner::Choice choice = choose_schedule(*region, Kind::all_reduce, count * es);
  if (choice.schedule == Schedule::single_copy) {
    SEAM_LOG_DEBUG("all_reduce: shm schedule single-copy shares ({} B)", count * es);
    comm::Task reduce = single_copy_all_reduce(
        g, region, send, recv, count, dtype, op,
        signature_of(Collective::all_reduce, dtype, op, count, ShmVariant::single_copy));
    co_await comm::run(reduce);
    region.finish(choice);
    co_return;
  }
  const size_t per_round = region->slot_bytes() / es;
  const uint64_t rounds = rounds_for(count, per_round);
  // All but small buffers are reduced in shares, unless the tuner chose otherwise: each rank
  // copies in the peers' shares of the round, folds its own share into its result slot, then
  // every rank copies all shares (all but its own where results stream: that one reached recv
  // with the fold). n times less reading than every rank folding everything, for one more flag
  // wait per round.
  const bool in_shares = all_reduce_in_shares(*region, count * es, choice.schedule);
  SEAM_LOG_DEBUG("all_reduce: shm schedule slots, {} ({} B)",
                 in_shares ? "in shares" : "every rank folding the whole buffer", count * es);
  BufferExchange exchange(
      g, *region,
      signature_of(Collective::all_reduce, dtype, op, count,
                   in_shares ? ShmVariant::slots : ShmVariant::slots_whole),
      "all_reduce", rounds);
  const kernels::Store store = store_for(count * es, n, send == recv);
  // Where results stream, this rank's share streams to recv as it is folded into its slot.
  const bool own_share_streamed = store == kernels::Store::streaming;
  const Helpers helpers(*region, count * es);
  Sources sources(n);
  for (uint64_t k = 0; k < rounds; ++k, exchange.next()) {
    const uint64_t round = exchange.round();
    const size_t begin = k * per_round, length = std::min(per_round, count - begin);
    const SlotPlaces places = slot_places(n, length * es, region->slot_bytes());
    const size_t place = places.of(round);
    auto slot_of = [&](int p) { return region->slot(p, round) + place; };
    if (!in_shares) {
      if (length) std::memcpy(slot_of(me), send + begin * es, length * es);  // send may be null at count 0
      exchange.announce();
      claim_next_place(*region, me, round, places, length * es);
      co_await exchange.peers_ready();
      for (int p = 0; p < n; ++p) sources[p] = p == me ? send + begin * es : slot_of(p);
      kernels::reduce(recv + begin * es, sources, length, dtype, op, store);
      continue;
    }
    const auto shares = even_blocks(length, n);
    const auto at = block_offsets(shares);
    // This rank's own share is read by no peer.
    const Helpers::Copy copy_in[] = {
        {slot_of(me), send + begin * es, at[me] * es},
        {slot_of(me) + at[me + 1] * es, send + (begin + at[me + 1]) * es, (length - at[me + 1]) * es}};
    helpers.copy(copy_in);
    exchange.announce();
    claim_next_place(*region, me, round, places, length * es);
    co_await exchange.peers_ready();
    for (int p = 0; p < n; ++p)
      sources[p] = p == me ? send + (begin + at[me]) * es : slot_of(p) + at[me] * es;
    if (own_share_streamed)
      helpers.reduce_and_keep(recv + (begin + at[me]) * es, region->result(me, round), sources,
                              shares[me], dtype, op);
    else
      helpers.reduce(region->result(me, round), sources, shares[me], dtype, op);
    exchange.announce_done();
    co_await exchange.peers_done();
    Copies copy_out(n);
    for (int p : peers_from(me, n, !own_share_streamed))
      copy_out[p] = {recv + (begin + at[p]) * es, region->result(p, round), shares[p] * es};
    helpers.copy(copy_out, store);
  }
  region.finish(choice);
}

comm::Task shm_reduce_scatter(Group& g, std::string_view collective, const char* send, char* out,
                              Blocks counts, DType dtype, ReduceOp op) {
  g.compares_arguments();  // the region's call signatures
  RegionLease region;
  co_await take_region(g, region);
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  const size_t total = off.back();
  if (const uint64_t send_handle = zero_copy_handle(send, total * es, total * es)) {
    SEAM_LOG_DEBUG("{}: shm schedule zero-copy ({} B in SharedHostMemory)", collective, total * es);
    const ZeroCopyHandles handles{send_handle, zero_copy_handle(out, counts[me] * es, total * es)};
    comm::Task reduce =
        zero_copy_reduce_scatter(g, *region, collective, send, out, handles, counts, dtype, op);
    co_await comm::run(reduce);
    region.finish();
    co_return;
  }
  const ScheduleTuner::Choice choice =
      choose_schedule(*region, Kind::reduce_scatter, total * es);
  if (choice.schedule == Schedule::single_copy) {
    const bool balanced = single_copy_folds_even_shares(*region, counts);
    SEAM_LOG_DEBUG("{}: shm schedule single-copy{} ({} B)", collective,
                   balanced ? ", even shares of all blocks" : "", total * es);
    comm::Task reduce = single_copy_reduce_scatter(
        g, region, collective, send, out, counts, dtype, op, balanced,
        signature_of(Collective::reduce_scatterv, dtype, op, counts, single_copy_variant(balanced)));
    co_await comm::run(reduce);
    region.finish(choice);
    co_return;
  }
  const bool balanced = folds_even_shares(*region, counts);
  SEAM_LOG_DEBUG("{}: shm schedule slots, {} ({} B)", collective,
                 balanced ? "even shares of all blocks" : "each rank its own block", total * es);
  // Each round a rank's slot holds a piece of every block (the own one only when balanced);
  // pieces round up, so leave room for one extra element per block.
  const uint64_t rounds = rounds_for(total, region->slot_bytes() / es - n);
  const Pieces pieces = cut(counts, rounds);
  Blocks at(n + 1, 0);  // where block j's piece sits in a slot, in elements
  for (int j = 0; j < n; ++j) at[j + 1] = at[j] + pieces.piece[j];
  // Balanced, rank r folds slot positions [share[r], share[r + 1]) of every round.
  const Blocks share = balanced ? block_offsets(even_blocks(at[n], n)) : Blocks();
  BufferExchange exchange(g, *region,
                          signature_of(Collective::reduce_scatterv, dtype, op, counts,
                                       balanced ? ShmVariant::slots_balanced : ShmVariant::slots),
                          collective, rounds);
  const kernels::Store store = store_for(total * es, n, out == send + off[me] * es);
  const Helpers helpers(*region, total * es);
  Sources sources(n);
  const SlotPlaces places =
      slot_places(n, at[n] * es, region->slot_bytes(), kScatterPlacedFromBytes);
  for (uint64_t k = 0; k < rounds; ++k, exchange.next()) {
    const uint64_t round = exchange.round();
    const size_t place = places.of(round);
    auto slot_of = [&](int p) { return region->slot(p, round) + place; };
    char* mine = slot_of(me);
    // Block j's piece of this round: slot positions [at[j], piece_end(j)), from send + from(j).
    auto piece_end = [&](int j) { return at[j] + pieces.length(counts[j], j, k); };
    auto from = [&](int j) { return send + (off[j] + k * pieces.piece[j]) * es; };
    char* to = out + k * pieces.piece[me] * es;  // this rank's piece of out
    Copies copies(2 * n);  // at most two parts of each block (balanced), all empty at first
    if (!balanced) {
      for (int j = 0; j < n; ++j)
        if (j != me) copies[j] = {mine + at[j] * es, from(j), (piece_end(j) - at[j]) * es};
      helpers.copy(copies);
      exchange.announce();
      claim_next_place(*region, me, round, places, at[n] * es);
      co_await exchange.peers_ready();
      for (int p = 0; p < n; ++p) sources[p] = p == me ? from(me) : slot_of(p) + at[me] * es;
      helpers.reduce(to, sources, piece_end(me) - at[me], dtype, op, store);
      continue;
    }
    // Every piece goes into the slot but the part of this rank's own share, which no peer reads.
    for (int j = 0; j < n; ++j) {
      const size_t end = piece_end(j);
      int part = 0;
      for (auto [first, last] : {std::pair{at[j], std::min(end, share[me])},
                                 std::pair{std::max(at[j], share[me + 1]), end}}) {
        if (first < last)
          copies[2 * j + part] = {mine + first * es, from(j) + (first - at[j]) * es, (last - first) * es};
        ++part;
      }
    }
    helpers.copy(copies);
    exchange.announce();
    claim_next_place(*region, me, round, places, at[n] * es);
    co_await exchange.peers_ready();
    // This rank's share: the parts of its own block straight into out, the others' into its
    // result slot, where their owners copy them from. Part j: slot positions [first[j],
    // first[j] + length[j]).
    Blocks first(n), length(n);
    for (int j = 0; j < n; ++j) {
      first[j] = std::clamp(at[j], share[me], share[me + 1]);
      length[j] = std::clamp(piece_end(j), share[me], share[me + 1]) - first[j];
    }
    helpers.split_pieces(length, es, [&](size_t j, size_t b, size_t e) {
      const size_t begin = first[j] + b;
      Sources from_all(n);
      for (int p = 0; p < n; ++p)
        from_all[p] = p == me ? from(static_cast<int>(j)) + (begin - at[j]) * es : slot_of(p) + begin * es;
      if (static_cast<int>(j) == me)
        kernels::reduce(to + (begin - at[me]) * es, from_all, e - b, dtype, op, store);
      else
        kernels::reduce(region->result(me, round) + (begin - share[me]) * es, from_all, e - b, dtype, op);
    }, n);
    exchange.announce_done();
    co_await exchange.peers_done();
    Copies copy_out(n);
    for (int p : peers_from(me, n, false)) {
      const size_t first = std::clamp(at[me], share[p], share[p + 1]);
      const size_t last = std::clamp(piece_end(me), share[p], share[p + 1]);
      if (first < last)
        copy_out[p] = {to + (first - at[me]) * es, region->result(p, round) + (first - share[p]) * es,
                       (last - first) * es};
    }
    helpers.copy(copy_out, store);
  }
  region.finish(choice);
}

comm::Task shm_all_gather(Group& g, std::string_view collective, const char* send, char* recv,
                          Blocks counts, DType dtype) {
  return shm_all_gather_on(g, nullptr, collective, send, recv, std::move(counts), dtype);
}

comm::Task shm_all_gather_on(Group& g, RegionLease* held, std::string_view collective,
                             const char* send, char* recv, Blocks counts, DType dtype) {
  // One coroutine frame whether the caller holds the region or not.
  RegionLease acquired;
  if (!held) g.compares_arguments();  // the region's call signatures
  if (!held) co_await take_region(g, acquired);
  RegionLease& region = held ? *held : acquired;
  const int n = g.size(), me = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  if (const uint64_t recv_handle = zero_copy_handle(recv, off.back() * es, off.back() * es)) {
    SEAM_LOG_DEBUG("{}: shm schedule zero-copy ({} B in SharedHostMemory)", collective, off.back() * es);
    const ZeroCopyHandles handles{zero_copy_handle(send, counts[me] * es, off.back() * es),
                                  recv_handle};
    comm::Task gather =
        zero_copy_all_gather(g, *region, collective, send, recv, handles, counts, dtype);
    co_await comm::run(gather);
    region.finish();
    co_return;
  }
  // A broadcast is a gather of the root's block alone; its size classes are tuned apart.
  const Kind kind = collective == "broadcast" ? Kind::broadcast : Kind::all_gather;
  const ScheduleTuner::Choice choice = choose_schedule(*region, kind, off.back() * es);
  const bool single_copy = choice.schedule == Schedule::single_copy;
  const bool split = single_copy && single_copy_splits_blocks(*region, counts);
  // The schedule is part of the signature: ranks that disagree on it fail with a mismatch.
  const CallSignature signature =
      signature_of(Collective::all_gatherv, dtype, ReduceOp::sum, counts,
                   single_copy ? single_copy_variant(split) : ShmVariant::slots);
  if (single_copy) {
    SEAM_LOG_DEBUG("{}: shm schedule single-copy{} ({} B)", collective,
                   split ? ", the larger block split" : "", off.back() * es);
    comm::Task gather =
        single_copy_all_gather(g, region, collective, send, recv, counts, dtype, split, signature);
    co_await comm::run(gather);
    region.finish(choice);
    co_return;
  }
  SEAM_LOG_DEBUG("{}: shm schedule slots ({} B)", collective, off.back() * es);
  const size_t largest = *std::max_element(counts.begin(), counts.end());
  const uint64_t rounds = rounds_for(largest, region->slot_bytes() / es);
  const Pieces pieces = cut(counts, rounds);
  BufferExchange exchange(g, *region, signature, collective, rounds);
  const kernels::Store store = copy_store_for(off.back() * es, n, false);
  const Helpers helpers(*region, off.back() * es);
  char* own = recv + off[me] * es;
  // A broadcast's root has nothing to copy out and returns while the others still copy its last
  // round, so explored calls end together: rank 0 times a call to its own end, and as the root
  // it would find the slots far faster than its peers do.
  const bool end_together = kind == Kind::broadcast && choice.exploring;
  const size_t place_bytes = ceil_div(largest, rounds) * es;
  const SlotPlaces places = slot_places(n, place_bytes, region->slot_bytes());
  for (uint64_t k = 0; k < rounds; ++k, exchange.next()) {
    const uint64_t round = exchange.round();
    const size_t place = places.of(round);
    helpers.copy(region->slot(me, round) + place, send + k * pieces.piece[me] * es,
                 pieces.length(counts[me], me, k) * es);
    exchange.announce();
    claim_next_place(*region, me, round, places, place_bytes);
    // This rank's own block moves while the peers fill their first slots.
    if (k == 0 && own != send) helpers.copy(own, send, counts[me] * es, store);
    co_await exchange.peers_ready();
    Copies copy_out(n);
    for (int p : peers_from(me, n, false))
      copy_out[p] = {recv + (off[p] + k * pieces.piece[p]) * es, region->slot(p, round) + place,
                     pieces.length(counts[p], p, k) * es};
    helpers.copy(copy_out, store);
    if (end_together && k + 1 == rounds) {
      comm::Task finish = exchange.finish();
      co_await comm::run(finish);
    }
  }
  region.finish(choice);
}

}  // namespace seam::collectives
