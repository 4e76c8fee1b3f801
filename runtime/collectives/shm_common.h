// What the shared-memory schedules (shm_schedules.cpp: through the slots or single-copy;
// shm_zero_copy.cpp: on shared host memory) have in common: call signatures, store choice,
// peer order, the doorbells that wake sleeping ranks, and the two waits of schedules that work
// on the peers' own buffers.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "layouts/dtype.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/shm_region.h"
#include "runtime/collectives/shm_variant.h"

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
CallSignature signature_of(Collective c, DType dtype, ReduceOp op, const std::vector<size_t>& counts,
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

/// The ranks in the order rank `me` visits them: me + 1, me + 2, ... (and me last when
/// `with_me`), so that ranks in step read from different peers, not all from rank 0 at once
/// (single-copy reads of one process serialise on its page tables).
std::vector<int> peers_from(int me, int n, bool with_me);

/// Results reach the user's buffer through non-temporal stores when the call's buffers on all
/// local ranks (`bytes` each) overflow the last-level cache twice over and this rank has not
/// just read the destination lines (out-of-place reductions, gathers): writing through the
/// cache would then first read every line from memory. Smaller results stay in cache for
/// whoever reads them next. (2 ranks on a 32 MiB-L3 EPYC: cached stores 1.2-1.6x faster from
/// 1 to 16 MiB, streaming ones 1.25x faster at 64 MiB all-gather.)
kernels::Store store_for(size_t bytes, int ranks, bool destination_cached);

// The communicator's driver spins only while its transport moves, then sleeps until a message
// arrives (or 1 ms passes); flags in the region move no transport. So the last rank to publish
// a round rings, with a one-byte message, every rank that may have gone to sleep waiting (its
// core taken by another rank on an oversubscribed host): in operations of several rounds all
// of them, since the ring is also what keeps their drivers spinning through the next rounds;
// in one-round operations only those that have waited for longer than half their spin. The
// rung ranks collect their ring before the operation ends.
/// `co_await doorbells.drain()`: every ring this rank sent has left and every ring it is owed
/// has come (ready at once when there are none).
struct DoorbellsAwaiter : comm::detail::AwaiterBase<DoorbellsAwaiter> {
  ReceivesAwaiter receives;
  comm::detail::RequestsAwaiter sends;
  bool ready() override { return receives.ready() && sends.ready(); }
  int blocking_peer() const override {
    const int peer = receives.blocking_peer();
    return peer >= 0 ? peer : sends.blocking_peer();
  }
  void await_resume() {
    receives.await_resume();
    sends.await_resume();
  }
};

class Doorbells {
 public:
  Doorbells(Group& g, uint64_t rounds) : g_(g), wake_all_(rounds > 1) {}
  bool wake_all() const { return wake_all_; }
  /// After publishing: the last rank rings those the region says to wake.
  void ring(uint64_t wake);
  /// After every rank published: expect the last one's ring if it rang this rank.
  void expect(const ShmRegion& region, uint64_t round, bool results);
  DoorbellsAwaiter drain();

 private:
  Group& g_;
  bool wake_all_;
  std::vector<transport::RequestPtr> sends_;
  std::vector<ExpectedReceive> receives_;
};

/// `co_await` for every rank's publication of a round (peers_published), then for the doorbell
/// this rank is owed for it.
struct RoundAwaiter : PublishedAwaiter {
  Doorbells* doorbells = nullptr;
  void await_resume() {
    PublishedAwaiter::await_resume();
    doorbells->expect(*region, round, results);
  }
};

/// The rounds of a shared-memory schedule and their waits. Each round every rank announces what
/// it put in its slot or which buffers it works on (`announce(a, b)`), waits for all
/// (`co_await peers_ready()`), works; reductions in shares then say their share is done and
/// wait for all (`announce_done()`, `co_await peers_done()`); `next()` moves to the next round.
/// Schedules that work on the peers' own buffers end with `co_await run(finish())`, so no rank's
/// buffers change while a peer still uses them; the others with `settle()`.
class BufferExchange {
 public:
  /// `wake_all`: the last rank to publish rings every other one (operations of several waits),
  /// not only those asleep by now (see Doorbells).
  BufferExchange(Group& g, ShmRegion& region, CallSignature signature, std::string_view collective,
                 uint64_t rounds = 1, bool wake_all = true)
      : g_(g), region_(region), signature_(signature), collective_(collective),
        round_(region.take_rounds(rounds)), doorbells_(g, wake_all ? 2 : 1) {
    region.note_spin(g.rank(), g.spin());  // before this operation's first publication
    note_schedule(signature);
  }
  uint64_t round() const { return round_; }
  /// Moves to the exchange's next round (a rank reaches it only after every rank's
  /// announcement of this one, so buffers announced before stay readable until finish()).
  void next() { ++round_; }
  /// Publishes this rank's round with two words (see ShmRegion::publish_words).
  void announce(uint64_t first_word = 0, uint64_t second_word = 0);
  /// Waits for every rank's announcement and checks the signatures.
  RoundAwaiter peers_ready();
  /// Publishes that this rank's result for the round is there.
  void announce_done();
  /// Waits for every rank's result.
  RoundAwaiter peers_done();
  /// `co_await settle()`: collects the doorbell messages still owed (at the end).
  DoorbellsAwaiter settle() { return doorbells_.drain(); }
  /// announce_done(), peers_done(), and the doorbells.
  comm::Task finish();

 private:
  Group& g_;
  ShmRegion& region_;
  CallSignature signature_;
  std::string_view collective_;
  uint64_t round_;
  Doorbells doorbells_;
};

}  // namespace seam::collectives
