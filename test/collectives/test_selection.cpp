// Algorithm selection with the built-in thresholds (this test runs without SEAM_ALGO and
// SEAM_SMALL_MSG_BYTES).
#include <doctest/doctest.h>

#include "runtime/collectives/selection.h"
#include "runtime/collectives/shm_tuner.h"

namespace seam::test {

using collectives::Algorithm;
using collectives::choose_algorithm;
using collectives::Collective;

TEST_CASE("local groups on the shm transport reduce and gather through shared memory") {
  for (auto c : {Collective::all_reduce, Collective::reduce_scatter, Collective::reduce_scatterv,
                 Collective::all_gather, Collective::all_gatherv})
    for (size_t bytes : {size_t{4}, size_t{1} << 26}) CHECK(choose_algorithm(c, 4, bytes, "shm") == Algorithm::shm);
}

TEST_CASE("message transports take direct for small buffers and the ring for large ones") {
  CHECK(choose_algorithm(Collective::all_reduce, 4, 1024, "ucx") == Algorithm::direct);
  CHECK(choose_algorithm(Collective::all_reduce, 4, size_t{1} << 24, "ucx") == Algorithm::ring);
  CHECK(choose_algorithm(Collective::broadcast, 4, size_t{1} << 24, "shm") == Algorithm::ring);
  CHECK(choose_algorithm(Collective::all_gather, 4, 1024, "shm+ucx") == Algorithm::direct);
  // One rank has nobody to share memory with.
  CHECK(choose_algorithm(Collective::all_reduce, 1, 1024, "shm") == Algorithm::direct);
}

TEST_CASE("scatterv and barrier have one schedule") {
  CHECK(choose_algorithm(Collective::scatterv, 4, size_t{1} << 24, "ucx") == Algorithm::direct);
  CHECK(choose_algorithm(Collective::barrier, 4, 0, "shm") == Algorithm::direct);
}

}  // namespace seam::test

namespace seam::test {

using collectives::ScheduleTuner;

TEST_CASE("the schedule tuner explores each schedule in a row, then every rank reads rank 0's verdict") {
  std::atomic<uint8_t> table[ScheduleTuner::kTableBytes] = {};
  std::atomic<int64_t> starts[4] = {};
  ScheduleTuner rank0, rank1;
  rank0.attach(table, starts, 2, 0);
  rank1.attach(table, starts, 2, 1);
  const size_t bytes = size_t{1} << 20;
  // Small calls are never tuned: they keep the fallback and count nothing.
  CHECK(rank1.choose(ScheduleTuner::Kind::all_gather, 1024, true).single_copy);
  CHECK_FALSE(rank1.choose(ScheduleTuner::Kind::all_gather, 1024, false).single_copy);
  for (int call = 0; call < 10; ++call) {
    auto a = rank0.choose(ScheduleTuner::Kind::all_gather, bytes, false);
    auto b = rank1.choose(ScheduleTuner::Kind::all_gather, bytes, false);
    CHECK(a.single_copy == (call >= 5));
    CHECK(b.single_copy == a.single_copy);
    CHECK(a.timed == (call % 5 != 0));  // the first call of each block warms up
    CHECK_FALSE(b.timed);
    // Both left their start where rank 0 looks for it.
    CHECK(a.start_slot == b.start_slot);
    CHECK(starts[2 * 1 + b.start_slot].load() > 0);
    rank0.done(a);
    rank1.done(b);
  }
  // Rank 0 decided at the end of the last explored call; the next call still takes the
  // fallback (a peer may have chosen before the verdict was written), the ones after the verdict.
  const uint8_t verdict = table[2 * ScheduleTuner::kClasses + 4].load();
  REQUIRE(verdict != 0);
  CHECK_FALSE(rank1.choose(ScheduleTuner::Kind::all_gather, bytes, false).single_copy);
  CHECK(rank1.choose(ScheduleTuner::Kind::all_gather, bytes, false).single_copy == (verdict == 2));
  // Other kinds and size classes have their own counts: they start exploring with the slots.
  CHECK_FALSE(rank1.choose(ScheduleTuner::Kind::all_reduce, bytes, true).single_copy);
  CHECK_FALSE(rank1.choose(ScheduleTuner::Kind::all_gather, 2 * bytes, true).single_copy);
}

TEST_CASE("the schedule tuner keeps the fallback unless the other schedule is more than 10% faster") {
  CHECK(ScheduleTuner::prefer_single_copy(1.0, 1.05, true));
  CHECK_FALSE(ScheduleTuner::prefer_single_copy(1.0, 1.15, true));
  CHECK_FALSE(ScheduleTuner::prefer_single_copy(1.0, 0.95, false));
  CHECK(ScheduleTuner::prefer_single_copy(1.0, 0.85, false));
}

}  // namespace seam::test
