// What the shared-memory schedules (shm/schedules.cpp: through the slots or single-copy;
// shm/zero_copy.cpp: on shared host memory) have in common: call signatures, store choice,
// peer order, and the rounds of publications and waits (waking the peers that sleep).
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <span>
#include <string_view>

#include "kernels/reduce/reduce.h"
#include "seam/dtype.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/shm/region.h"
#include "runtime/collectives/shm/variant.h"

namespace seam::collectives {


/// Records the variant packed in `signature` as the last shared-memory schedule of this process
/// (last_shm_schedule).
void note_schedule(CallSignature signature);

/// Collective, dtype, op, the schedule variant and the element count, packed.
CallSignature signature_of(Collective c, DType dtype, ReduceOp op, size_t total,
                           ShmVariant variant = ShmVariant::slots);
/// The same for the v-collectives, with a hash of every rank's block count in place of the
/// total: ranks that disagree on the blocks, even with equal totals, fail with a MismatchError
/// instead of placing each other's data by different offsets.
CallSignature signature_of(Collective c, DType dtype, ReduceOp op, std::span<const size_t> counts,
                           ShmVariant variant = ShmVariant::slots);
/// The variant a signature carries.
ShmVariant variant_of(CallSignature signature);

inline size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/// The rounds of a slot schedule that moves `elements` at most `per_round` at a time: one at
/// least, so that a call of no elements still compares its signature with the peers' (a rank
/// that passed none while they passed some fails with them, not at their deadline).
inline uint64_t rounds_for(size_t elements, size_t per_round) {
  return elements ? ceil_div(elements, per_round) : 1;
}

/// The smallest rounds whose places move (slot_place): from 1 KiB, since claim_next_place makes
/// moving pay there; reduce-scatters only from 2 KiB, as their 1 KiB calls still lose by moving.
constexpr size_t kPlacedFromBytes = 1024, kScatterPlacedFromBytes = 2048;

/// The places of small rounds span the slot's first 64 KiB; larger rounds take at least four
/// places, up to ShmRegion::kPlacedBytes: two places are too few to keep off the peer's lines,
/// and a wider window for every round spreads small calls over more lines than they need.
constexpr size_t kPlacesWindowBytes = 64 * 1024, kLeastPlaces = 4;

/// Where in its slot each round of `bytes` puts them (alike on every rank): among two ranks, from
/// `from_bytes` up to half of ShmRegion::kPlacedBytes (small calls, and the short last round of a
/// long all-reduce), at the next place of the slot's head, round after round, so that a writer
/// seldom rewrites lines its peer has just read (it would wait for them to be taken back from the
/// peer's cache first); otherwise at the start. Among more ranks moving places costs more than
/// it saves.
struct SlotPlaces {
  size_t stride = 0;  ///< bytes from one place to the next
  size_t count = 1;   ///< places in the window; 1: every round at the start
  /// Whether rounds move from place to place.
  bool move() const { return count > 1; }
  /// Round `round`'s place: rounds alternate between a rank's two slots, so each slot sees every
  /// other round.
  size_t of(uint64_t round) const { return move() ? round / 2 % count * stride : 0; }
};

/// The places of rounds of `bytes` among `ranks` (those below `from_bytes` stay at the start).
inline SlotPlaces slot_places(int ranks, size_t bytes, size_t slot_bytes,
                              size_t from_bytes = kPlacedFromBytes) {
  const size_t stride = ceil_div(bytes, 64) * 64;
  const size_t window = std::min(
      {std::max(kPlacesWindowBytes, kLeastPlaces * stride), ShmRegion::kPlacedBytes, slot_bytes});
  if (ranks != 2 || bytes < from_bytes || 2 * stride > window) return {};
  return {stride, window / stride};
}

/// Round `round`'s place for `bytes` (slot_places).
inline size_t slot_place(int ranks, uint64_t round, size_t bytes, size_t slot_bytes,
                         size_t from_bytes = kPlacedFromBytes) {
  return slot_places(ranks, bytes, slot_bytes, from_bytes).of(round);
}

/// The largest rounds whose next place is claimed ahead (claim_next_place). Past it, the claims
/// cost more than they save; below it they spare the next round's stores the wait for the peer.
constexpr size_t kClaimedBytes = 2048;

/// Once this rank has filled its place of round `round` (`bytes` at `places`) and published it:
/// asks for the place of the next round, owned for writing (PREFETCHW), without waiting. Its
/// lines were last written rounds ago and the peer still holds them from its read; a store must
/// take them back first, and the fence after the next round's copy (BufferExchange's look for
/// sleepers) would wait for every one. Only where places move (a fixed place may still be read
/// by the peer), and for rounds up to kClaimedBytes.
inline void claim_next_place(const ShmRegion& region, int me, uint64_t round,
                             const SlotPlaces& places, size_t bytes) {
  if (!places.move() || bytes > kClaimedBytes) return;
#if defined(__x86_64__)
  const char* place = region.slot(me, round + 1) + places.of(round + 1);
  for (size_t at = 0; at < bytes; at += 64) asm volatile("prefetchw %0" : : "m"(place[at]));
#else
  (void)region, (void)me, (void)round, (void)bytes;
#endif
}

/// The ranks in the order rank `me` visits them: me + 1, me + 2, ... (and me last when
/// `with_me`), so that ranks in step read from different peers, not all from rank 0 at once
/// (single-copy reads of one process serialise on its page tables). A range for range-for
/// loops: no allocation on a collective's path.
struct PeerOrder {
  struct Iterator {
    int me, n, k;
    int operator*() const { return (me + k) % n; }
    Iterator& operator++() {
      ++k;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return k != o.k; }
  };
  int me, n, visits;
  Iterator begin() const { return {me, n, 1}; }
  Iterator end() const { return {me, n, visits + 1}; }
};
inline PeerOrder peers_from(int me, int n, bool with_me) { return {me, n, n - 1 + (with_me ? 1 : 0)}; }

/// Results reach the user's buffer through non-temporal stores when the call's buffers on all
/// local ranks (`bytes` each) overflow the last-level cache, counted up to 32 MiB, twice over
/// and this rank has not just read the destination lines (out-of-place reductions, gathers):
/// writing through the cache would then first read every line from memory. Smaller results
/// stay in cache for whoever reads them next.
kernels::Store store_for(size_t bytes, int ranks, bool destination_cached);
/// store_for for the plain copies of gathers and the zero-copy reductions' results, counting only
/// the cache this process's copy probe found usable (kernels::usable_last_level_cache_bytes), so
/// ranks may differ: for local choices only. Out of place, a zero-copy reduction writes each line
/// of the results whole and reads none, as a copy does. The slot and single-copy reductions keep
/// store_for: streaming by the probe's count sped their gathers up but slowed those reductions.
/// The probe runs once per process, inside the first call that needs it; where the tuner times
/// that call, it is one slow sample of several, and the tuner takes their median.
kernels::Store copy_store_for(size_t bytes, int ranks, bool destination_cached);

// The communicator's driver spins a while, then sleeps until a message arrives, a peer wakes
// it, or 1 ms passes; flags in the region move no transport. So every publication is followed,
// before the rank waits, by a look for peers marked asleep (ShmRegion::any_asleep: a fence and a line
// per peer that only changes when it sleeps). Only where one sleeps, and every rank's flag of
// the round is there, the ring. A sleeper is woken once, when its round is complete: a halted
// vCPU is slow to run again, and a ring per publication would wake it up to n - 1 times a round.
// Every publisher whose flag a sleeper's last look missed finds its mark (the fences pair); of
// those, the last to pass its fence sees every flag, so one rings. A wait for one rank alone
// (rank_ready) is rung by that rank's publication (wake_sleepers).

/// The exception `part` threw, or none. A schedule whose part touches the peers' buffers hands
/// it to BufferExchange::finish, so that a rank that failed still waits until no peer touches
/// its buffers, and the peers hear of the failure at once rather than at their deadline.
template <class Part>
std::exception_ptr failure_of(Part&& part) {
  try {
    part();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

/// The rounds of a shared-memory schedule and their waits. Each round every rank announces what
/// it put in its slot or which buffers it works on (`announce(a, b)`), waits for all
/// (`co_await peers_ready()`), works; reductions in shares then say their share is done and
/// wait for all (`announce_done()`, `co_await peers_done()`); `next()` moves to the next round.
/// Schedules that work on the peers' own buffers end with `co_await run(finish())`, so no rank's
/// buffers change while a peer still uses them.
class BufferExchange {
 public:
  BufferExchange(Group& g, ShmRegion& region, CallSignature signature, std::string_view collective,
                 uint64_t rounds = 1)
      : g_(g), region_(region), signature_(signature), collective_(collective),
        round_(region.take_rounds(rounds)) {
    note_schedule(signature);
  }
  uint64_t round() const { return round_; }
  /// Moves to the exchange's next round (a rank reaches it only after every rank's
  /// announcement of this one, so buffers announced before stay readable until finish()).
  void next() { ++round_; }
  /// Publishes this rank's round with two words (see ShmRegion::publish_words).
  void announce(uint64_t first_word = 0, uint64_t second_word = 0);
  /// Wakes the peers that sleep on the round if it is complete, then waits for every rank's
  /// announcement and checks the signatures. (The wake-up waits until here, so the work a rank
  /// does between announcing and waiting drains its stores before the fence.)
  PublishedAwaiter peers_ready();
  /// peers_ready for group rank `rank` alone.
  PublishedAwaiter rank_ready(int rank);
  /// Wakes every peer asleep in a wait, the round complete or not: after an announcement that
  /// a peer waits for alone (rank_ready).
  void wake_sleepers();
  /// Publishes that this rank's result for the round is there.
  void announce_done();
  /// The same as peers_ready for every rank's result.
  PublishedAwaiter peers_done();
  /// announce_done(), then peers_done(). With `failure` (the exception that stopped this rank's
  /// part), publishes the failure instead, waits all the same (so that no peer still reads or
  /// writes this rank's buffers when it returns), then rethrows it.
  comm::Task finish(std::exception_ptr failure = nullptr);

 private:
  /// After this rank's publication (inputs, or `results`): wakes the sleeping peers once every
  /// rank's flag of the round is there.
  void wake_if_complete(bool results);
  /// The wait for every rank's announcement (or `results`) of this round.
  PublishedAwaiter all_published(bool results) const;

  Group& g_;
  ShmRegion& region_;
  CallSignature signature_;
  std::string_view collective_;
  uint64_t round_;
};

}  // namespace seam::collectives
