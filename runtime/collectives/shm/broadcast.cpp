// Broadcasts through shared memory. Small ones go through the root's slot without a wait for
// every rank (eager): the root copies its buffer into its slot, publishes the round and returns;
// every other rank publishes, waits for the root alone and copies the slot into its buffer. A
// rank's next operation through the region first waits until every rank published this round
// (ShmRegion::unconfirmed_round), which keeps each rank at most one round ahead of its peers, as
// the slots' reuse every other round needs. Larger broadcasts are a gather of the root's block.
// Where the ranks outnumber their cores, small ones go as messages instead, which need no rank
// to run at the same time as another; so do those of two ranks that may not read each other's
// memory (the gather's single-copy schedule is what makes them worth the region). Where ranks
// may part between messages and the gather, a marker message tells them apart (shm_broadcast).
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <exception>

#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/shm/common.h"

namespace seam::collectives {
namespace {

/// Broadcasts up to this size take the eager schedule; past it the gather of the root's block
/// does as well.
constexpr size_t kEagerBytes = 16 * 1024;

/// Where the ranks outnumber their cores, broadcasts up to this size go as messages: the root
/// does not wait for peers that are off their cores.
constexpr size_t kMessagesWhenOversubscribedBytes = 64 * 1024;

comm::Task eager_broadcast(Group& g, ShmRegion& region, char* buffer, size_t count, DType dtype,
                           int root) {
  const size_t bytes = count * dtype_size(dtype);
  BufferExchange exchange(g, region,
                          signature_of(Collective::all_gatherv, dtype, ReduceOp::sum,
                                       root_block_gather(g, buffer, count, dtype, root).blocks,
                                       ShmVariant::slots_eager),
                          "broadcast");
  const uint64_t round = exchange.round();
  char* slot = region.slot(root, round) + slot_place(g.size(), round, bytes, region.slot_bytes());
  region.unconfirmed_round = round;
  if (g.rank() == root) {
    std::memcpy(slot, buffer, bytes);
    exchange.announce();
    // A peer asleep in its wait for the root alone is rung now, not when the round completes.
    exchange.wake_sleepers();
    co_return;
  }
  exchange.announce();
  // A rank that disagrees with the root fails here, and every rank at its next call
  // (shm_broadcast).
  co_await exchange.rank_ready(root);
  std::memcpy(buffer, slot, bytes);
}

/// Whether some rank took the eager schedule for `round` (every rank published it).
bool went_eager(const ShmRegion& region, uint64_t round) {
  for (int p = 0; p < region.ranks(); ++p)
    if (variant_of(region.signature_of(p, round)) == ShmVariant::slots_eager) return true;
  return false;
}

/// The marker of the gather where ranks may part between it and messages (see shm_broadcast):
/// the root sends it to every peer (its sends join `sent`); each peer waits for it, or, where
/// the root's data came instead, throws an aborting MismatchError.
comm::Task exchange_markers(Group& g, char* buffer, int root,
                            std::vector<transport::RequestPtr>& sent) {
  if (g.rank() == root) {
    for (int p = 0; p < g.size(); ++p)
      if (p != root) sent.push_back(g.isend(p, kBroadcastMarkerStep, buffer, 0));
    co_return;
  }
  const ExpectedReceive marker = post_receive(g, root, kBroadcastMarkerStep, nullptr, 0);
  ReceiveOrStrayAwaiter wait = received_or_stray(g, root, marker, 0);
  co_await wait;
  if (wait.stray()) throw_root_took_other_schedule(g, root, "messages");
  co_await received("broadcast", marker);
}

}  // namespace

comm::Task shm_broadcast(Group& g, char* buffer, size_t count, DType dtype, int root) {
  const size_t bytes = count * dtype_size(dtype);
  // Where some ranks may send this broadcast as messages and others take the gather (their
  // counts on both sides of the size that parts them), the gather's root first sends each peer
  // an empty message (kBroadcastMarkerStep), which every peer of the gather waits for. A peer
  // that took messages finds the marker instead of its data, and a peer of the gather the
  // root's data instead of the marker: it fails with an aborting MismatchError, as the others
  // wait for it. Two ranks meet here from 64 KiB (selection.cpp) and exchange the marker before
  // the region's set-up, which would wait for a peer that took messages; where ranks
  // outnumber cores, the gathers that do not go eager, once the region says so.
  const bool two_ranks = g.size() == 2;
  std::vector<transport::RequestPtr> markers;
  {
    // The call's turn on the region is taken now, before the marker: a call issued after this
    // one must not take the region while this one waits for its marker, or the ranks' rounds
    // would pair different calls. The set-up waits until after the marker.
    RegionLease region;
    co_await take_region(g, region, reserve_region);
    if (two_ranks) {
      comm::Task first = exchange_markers(g, buffer, root, markers);
      co_await comm::run(first);
    }
    if (region.reserved_only()) {
      comm::Task complete = complete_region(g, region);
      co_await comm::run(complete);
    }
    // SEAM_SHM_SCHEDULE pins the eager schedule (slots-eager) or the gather's.
    const std::string& forced = region->config().schedule;
    const bool fits = bytes <= std::min(kEagerBytes, region->slot_bytes());
    const bool eager = fits && (forced.empty() || forced == shm_variant_name(ShmVariant::slots_eager));
    // Two ranks take shared memory for the kernel's copy, the root's core and its peer's each
    // moving part of the buffer (selection.cpp); without it (or with SEAM_SHM_SINGLE_COPY_BYTES
    // at 0), one message moves it as fast.
    const bool single_copy = region->single_copy() && region->config().single_copy_bytes != 0;
    const bool by_messages =
        forced.empty() && ((region->oversubscribed() && bytes <= kMessagesWhenOversubscribedBytes) ||
                           (two_ranks && !single_copy));
    if (!by_messages) {
      if (!two_ranks && !eager && forced.empty() && region->oversubscribed()) {
        comm::Task first = exchange_markers(g, buffer, root, markers);
        co_await comm::run(first);
      }
      // A mismatch where some rank went eager keeps the region, its round unconfirmed: an eager
      // root has returned, and where the counts put ranks on both sides of the eager size some
      // took the gather. The first wait of every rank's next call through the region compares
      // every rank's call of this round, so all fail there, drop the region at that same call,
      // and the communicator stays usable. (Where all took the gather, all failed in its wait
      // and drop the region now.)
      const uint64_t round = region->next_round();
      std::exception_ptr mismatch;
      try {
        if (eager) {
          SEAM_LOG_DEBUG("broadcast: shm schedule slots-eager ({} B)", bytes);
          comm::Task call = eager_broadcast(g, *region, buffer, count, dtype, root);
          co_await comm::run(call);
          region.finish();
        } else {
          RootBlockGather gather = root_block_gather(g, buffer, count, dtype, root);
          comm::Task call = shm_all_gather_on(g, &region, "broadcast", gather.own, buffer,
                                              Blocks(gather.blocks), dtype);
          co_await comm::run(call);
        }
      } catch (const MismatchError&) {
        mismatch = std::current_exception();
      }
      if (mismatch) {
        if (eager || went_eager(*region, round)) {
          region->unconfirmed_round = round;
          region.finish();
        }
        std::rethrow_exception(mismatch);
      }
      co_await comm::all_of(std::move(markers));
      co_return;
    }
    region.finish();
  }
  const Algorithm a = message_algorithm(Collective::broadcast, bytes, g.size());
  SEAM_LOG_DEBUG("broadcast: as messages, {} ({} B)", algorithm_name(a), bytes);
  note_algorithm(a);
  // More ranks than cores: a peer of these messages watches for the marker of a root that took
  // the gather. (At two ranks the marker went first.)
  comm::Task messages =
      message_broadcast(a, g, buffer, count, dtype_size(dtype), root, /*watch_marker=*/!two_ranks);
  co_await comm::run(messages);
  co_await comm::all_of(std::move(markers));
}

}  // namespace seam::collectives
