// Algorithm selection with the built-in thresholds (this test runs without SEAM_ALGO and
// SEAM_SMALL_MSG_BYTES), and the small helpers the schedules share (peer order, block offsets).
#include <cstdint>
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/host_layout.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/shm/common.h"
#include "runtime/collectives/shm/tuner.h"

namespace seam::test {

using collectives::Algorithm;
using collectives::choose_algorithm;
using collectives::message_algorithm;
using collectives::Collective;

TEST_CASE("local groups on the shm transport reduce and gather through shared memory") {
  for (auto c : {Collective::all_reduce, Collective::reduce_scatter, Collective::reduce_scatterv,
                 Collective::all_gather, Collective::all_gatherv, Collective::broadcast})
    for (size_t bytes : {size_t{4}, size_t{1} << 26}) CHECK(choose_algorithm(c, 4, bytes, "shm") == Algorithm::shm);
  // A broadcast of two ranks is one message below 64 KiB.
  CHECK(choose_algorithm(Collective::broadcast, 2, 1024, "shm") == Algorithm::direct);
  CHECK(choose_algorithm(Collective::broadcast, 2, 64 * 1024 - 4, "shm") == Algorithm::direct);
  CHECK(choose_algorithm(Collective::broadcast, 2, 64 * 1024, "shm") == Algorithm::shm);
  CHECK(choose_algorithm(Collective::broadcast, 2, 1 << 20, "shm") == Algorithm::shm);
  CHECK(choose_algorithm(Collective::broadcast, 3, 16 * 1024, "shm") == Algorithm::shm);
}

TEST_CASE("message transports take direct for small buffers and the ring for large ones") {
  CHECK(choose_algorithm(Collective::all_reduce, 4, 1024, "ucx") == Algorithm::direct);
  CHECK(choose_algorithm(Collective::all_reduce, 4, size_t{1} << 24, "ucx") == Algorithm::ring);
  CHECK(choose_algorithm(Collective::broadcast, 4, size_t{1} << 24, "ucx") == Algorithm::ring);
  CHECK(choose_algorithm(Collective::all_gather, 4, 1024, "shm+ucx") == Algorithm::direct);
  // One rank has nobody to share memory with.
  CHECK(choose_algorithm(Collective::all_reduce, 1, 1024, "shm") == Algorithm::direct);
}

TEST_CASE("all-reduces of four ranks or more weigh direct by the bytes each rank sends") {
  const size_t k = 1024;
  // Two and three ranks: direct up to 64 KiB, ring above.
  CHECK(message_algorithm(Collective::all_reduce, 64 * k, 3) == Algorithm::direct);
  CHECK(message_algorithm(Collective::all_reduce, 128 * k, 3) == Algorithm::ring);
  // Four ranks: direct while the buffer to three peers is at most 64 KiB, then halving.
  CHECK(message_algorithm(Collective::all_reduce, 16 * k, 4) == Algorithm::direct);
  CHECK(message_algorithm(Collective::all_reduce, 32 * k, 4) == Algorithm::halving);
  CHECK(message_algorithm(Collective::all_reduce, 128 * k, 4) == Algorithm::halving);
  CHECK(message_algorithm(Collective::all_reduce, 256 * k, 4) == Algorithm::ring);
  CHECK(message_algorithm(Collective::all_reduce, 16 * k, 8) == Algorithm::halving);
  CHECK(message_algorithm(Collective::all_reduce, 8 * k, 8) == Algorithm::direct);
  // The others keep direct and ring by size.
  CHECK(message_algorithm(Collective::reduce_scatter, 64 * k, 8) == Algorithm::direct);
  CHECK(message_algorithm(Collective::all_gather, 128 * k, 8) == Algorithm::ring);
  CHECK(choose_algorithm(Collective::all_reduce, 8, 64 * k, "ucx") == Algorithm::halving);
}

TEST_CASE("groups over hosts take the two-level schedules where their layout fits") {
  for (auto c : {Collective::all_reduce, Collective::reduce_scatterv, Collective::all_gatherv})
    for (size_t bytes : {size_t{4}, size_t{1} << 26}) {
      CHECK(choose_algorithm(c, 4, bytes, "shm+ucx", true) == Algorithm::hierarchical);
      // Over UCX alone (one rank per host, or SEAM_TRANSPORT=ucx) there is no shared memory.
      CHECK(choose_algorithm(c, 4, bytes, "ucx", true) != Algorithm::hierarchical);
    }
  CHECK(choose_algorithm(Collective::all_reduce, 4, 1024, "shm+ucx", false) == Algorithm::direct);
  CHECK(choose_algorithm(Collective::broadcast, 4, 1024, "shm+ucx", true) == Algorithm::hierarchical);
  CHECK(choose_algorithm(Collective::scatterv, 4, 1024, "shm+ucx", true) == Algorithm::direct);
}

TEST_CASE("host layout: consecutive ranks per host") {
  // Ranks 0-2 on host 7, 3-5 on host 2: hosts are numbered by their lowest rank.
  const auto layout = collectives::host_layout(std::vector{7, 7, 7, 2, 2, 2}, 4);
  CHECK(layout.two_level());
  CHECK(layout.host_major);
  CHECK(layout.hosts == 2);
  CHECK(layout.per_host == 3);
  CHECK(layout.local == std::vector<int>{3, 4, 5});
  CHECK(layout.local_index == 1);
  CHECK(layout.cross == std::vector<int>{1, 4});
  CHECK(layout.host_index == 1);
  CHECK(layout.ranks_by_host == std::vector<int>{0, 1, 2, 3, 4, 5});
}

TEST_CASE("host layout: ranks dealt round the hosts") {
  const auto layout = collectives::host_layout(std::vector{0, 1, 0, 1}, 2);
  CHECK(layout.two_level());
  CHECK_FALSE(layout.host_major);
  CHECK(layout.local == std::vector<int>{0, 2});
  CHECK(layout.local_index == 1);
  CHECK(layout.cross == std::vector<int>{2, 3});
  CHECK(layout.host_index == 0);
  CHECK(layout.ranks_by_host == std::vector<int>{0, 2, 1, 3});
}

TEST_CASE("host layout: uneven hosts, one rank per host, one host") {
  const auto uneven = collectives::host_layout(std::vector{0, 0, 0, 1}, 3);
  CHECK(uneven.hosts == 2);
  CHECK(uneven.per_host == 0);
  CHECK(uneven.fewest == 1);
  CHECK_FALSE(uneven.two_level());
  CHECK(uneven.two_level_all_reduce());
  CHECK(uneven.local == std::vector<int>{3});
  CHECK(uneven.cross == std::vector<int>{0, 3});
  // Past the smallest host's ranks, a rank does not cross the network.
  CHECK(collectives::host_layout(std::vector{0, 0, 0, 1}, 1).cross.empty());
  const auto five = collectives::host_layout(std::vector{0, 1, 0, 1, 0}, 3);
  CHECK(five.fewest == 2);
  CHECK(five.local == std::vector<int>{1, 3});
  CHECK(five.local_index == 1);
  CHECK(five.cross == std::vector<int>{2, 3});
  CHECK_FALSE(collectives::host_layout(std::vector{0, 1, 2}, 0).two_level_all_reduce());
  CHECK_FALSE(collectives::host_layout(std::vector{0, 1, 2}, 0).two_level());
  CHECK_FALSE(collectives::host_layout(std::vector{5, 5, 5, 5}, 0).two_level());
}

TEST_CASE("scatterv and barrier have one schedule") {
  CHECK(choose_algorithm(Collective::scatterv, 4, size_t{1} << 24, "ucx") == Algorithm::direct);
  CHECK(choose_algorithm(Collective::barrier, 4, 0, "shm") == Algorithm::direct);
}

}  // namespace seam::test

namespace seam::test {

using collectives::ScheduleTuner;
using Schedule = ScheduleTuner::Schedule;

/// Lets one explored call of the schedule `s` take `slow(s)` milliseconds more (the time rank
/// 0's tuner measures from both ranks' starts to its done()).
template <class Slow>
void take_time(Schedule s, Slow slow) {
  std::this_thread::sleep_for(std::chrono::milliseconds(slow(s)));
}

TEST_CASE("the schedule tuner explores each candidate in a row, then every rank reads rank 0's verdict") {
  std::atomic<uint8_t> table[ScheduleTuner::kTableBytes] = {};
  std::atomic<int64_t> starts[4] = {};
  ScheduleTuner rank0, rank1;
  rank0.attach(table, starts, 2, 0);
  rank1.attach(table, starts, 2, 1);
  const size_t bytes = size_t{1} << 20;
  const Schedule two[] = {Schedule::slots, Schedule::single_copy};
  const Schedule three[] = {Schedule::slots, Schedule::slots_whole, Schedule::single_copy};
  // Small calls are never tuned: they keep the fallback and count nothing; nor are calls with
  // one candidate.
  CHECK(rank1.choose(ScheduleTuner::Kind::all_gather, 1024, two, Schedule::single_copy).schedule ==
        Schedule::single_copy);
  CHECK(rank1.choose(ScheduleTuner::Kind::all_gather, 1024, two, Schedule::slots).schedule ==
        Schedule::slots);
  CHECK(rank1.choose(ScheduleTuner::Kind::all_gather, bytes, std::span(two, 1), Schedule::slots)
            .schedule == Schedule::slots);
  for (int call = 0; call < 15; ++call) {
    auto a = rank0.choose(ScheduleTuner::Kind::all_reduce, bytes, three, Schedule::slots);
    auto b = rank1.choose(ScheduleTuner::Kind::all_reduce, bytes, three, Schedule::slots);
    CHECK(a.schedule == three[call / 5]);
    CHECK(b.schedule == a.schedule);
    CHECK(a.timed == (call % 5 != 0));  // the first call of each block warms up
    CHECK_FALSE(b.timed);
    // Both left their start where rank 0 looks for it.
    CHECK(a.start_slot == b.start_slot);
    CHECK(starts[2 * 1 + b.start_slot].load() > 0);
    take_time(a.schedule,
              [](Schedule s) { return s == Schedule::slots ? 0 : 3; });  // the fallback wins
    rank0.done(a);
    rank1.done(b);
  }
  // Rank 0 decided at the end of the last explored call, tentatively; the next call still takes
  // the fallback (a peer may have chosen before the verdict was written), the one after reads
  // the mark and starts the confirming exploration, even of a verdict for the fallback.
  CHECK(table[0 * ScheduleTuner::kClasses + 4].load() ==
        ((static_cast<int>(Schedule::slots) + 1) | 0x80));
  CHECK(rank1.choose(ScheduleTuner::Kind::all_reduce, bytes, three, Schedule::slots).schedule ==
        Schedule::slots);
  CHECK(rank1.choose(ScheduleTuner::Kind::all_reduce, bytes, three, Schedule::slots).exploring);
  // Other kinds and size classes have their own counts: they start exploring the first candidate.
  CHECK(rank1.choose(ScheduleTuner::Kind::all_gather, bytes, two, Schedule::single_copy).schedule ==
        Schedule::slots);
  CHECK(rank1.choose(ScheduleTuner::Kind::all_reduce, 2 * bytes, three, Schedule::single_copy)
            .schedule == Schedule::slots);
}

/// Runs 2-rank calls of a 1 MiB all-gather (candidates slots and single-copy, fallback
/// single-copy) until both ranks take a verdict; `slow(s, exploration)` says how many
/// milliseconds schedule s takes in the first (0) and second (1) exploration. Returns the
/// verdict and counts the explored calls.
template <class Slow>
Schedule settle(Slow slow, int& explored_calls) {
  std::atomic<uint8_t> table[ScheduleTuner::kTableBytes] = {};
  std::atomic<int64_t> starts[4] = {};
  ScheduleTuner rank0, rank1;
  rank0.attach(table, starts, 2, 0);
  rank1.attach(table, starts, 2, 1);
  const Schedule two[] = {Schedule::slots, Schedule::single_copy};
  auto choose = [&](ScheduleTuner& rank) {
    return rank.choose(ScheduleTuner::Kind::all_gather, size_t{1} << 20, two,
                       Schedule::single_copy);
  };
  explored_calls = 0;
  for (int call = 0; call < ScheduleTuner::kSettlingCalls; ++call) {
    auto a = choose(rank0);
    auto b = choose(rank1);
    REQUIRE(a.schedule == b.schedule);
    REQUIRE(a.exploring == b.exploring);
    const int exploration = std::min(explored_calls / 10, 1);  // the verdict's calls: the second's
    explored_calls += a.exploring;
    take_time(a.schedule, [&](Schedule s) { return slow(s, exploration); });
    rank0.done(a);
    rank1.done(b);
  }
  auto a = choose(rank0);
  auto b = choose(rank1);
  CHECK_FALSE(a.exploring);
  CHECK(a.schedule == b.schedule);
  return a.schedule;
}

TEST_CASE("the schedule tuner leaves the fallback on the samples of two explorations") {
  struct Case {
    int slots_ms[2], single_copy_ms[2];  // in the first and the second exploration
    Schedule verdict;
    int explored;
  };
  const Case cases[] = {
      {{0, 0}, {3, 3}, Schedule::slots, 20},        // slots faster both times: taken after two
      {{0, 6}, {3, 0}, Schedule::single_copy, 20},  // faster by 3 ms, then slower by 6: it stays
      // Faster by 6 ms, then slower by 3: on the pooled samples the slots still win (medians
      // 1.5 against 3 ms), where the second verdict alone would not.
      {{0, 3}, {6, 0}, Schedule::slots, 20},
      {{3, 3}, {0, 0}, Schedule::single_copy, 20},  // the fallback faster both times
      // Even at first (the slots' calls cold), the slots then faster by 3 ms: the pooled
      // samples leave the fallback (medians 1.5 against 3 ms), where the first verdict kept it.
      {{3, 0}, {3, 3}, Schedule::slots, 20},
  };
  for (const Case& c : cases) {
    int explored = 0;
    CHECK(settle(
              [&](Schedule s, int exploration) {
                return s == Schedule::slots ? c.slots_ms[exploration]
                                            : c.single_copy_ms[exploration];
              },
              explored) == c.verdict);
    CHECK(explored == c.explored);
  }
}

TEST_CASE("the schedule tuner keeps the fallback unless another schedule is more than 10% faster") {
  constexpr double none = ScheduleTuner::kUnmeasured;
  CHECK(ScheduleTuner::decide({1.0, 1.05, none}, Schedule::single_copy) == Schedule::single_copy);
  CHECK(ScheduleTuner::decide({1.0, 1.15, none}, Schedule::single_copy) == Schedule::slots);
  CHECK(ScheduleTuner::decide({1.0, 0.95, none}, Schedule::slots) == Schedule::slots);
  CHECK(ScheduleTuner::decide({1.0, 0.85, none}, Schedule::slots) == Schedule::single_copy);
  // Of three, the fastest replaces the fallback.
  CHECK(ScheduleTuner::decide({1.0, 0.85, 0.7}, Schedule::slots) == Schedule::slots_whole);
  CHECK(ScheduleTuner::decide({1.0, 0.85, 0.8}, Schedule::single_copy) == Schedule::single_copy);
}

}  // namespace seam::test

TEST_CASE("peers_from visits the next ranks first, and this one last when asked") {
  auto visits = [](int me, int n, bool with_me) {
    std::vector<int> order;
    for (int p : seam::collectives::peers_from(me, n, with_me)) order.push_back(p);
    return order;
  };
  CHECK(visits(1, 4, true) == std::vector<int>{2, 3, 0, 1});
  CHECK(visits(1, 4, false) == std::vector<int>{2, 3, 0});
  CHECK(visits(3, 4, false) == std::vector<int>{0, 1, 2});
  CHECK(visits(0, 1, true) == std::vector<int>{0});
  CHECK(visits(0, 1, false).empty());
}

TEST_CASE("block helpers and InlineVector, in place and on the heap") {
  using seam::collectives::Blocks;
  for (int n : {1, 2, 3, 16, 17, 40}) {  // up to 16 ranks the offsets (n + 1) fit in place
    CAPTURE(n);
    const Blocks blocks = seam::collectives::even_blocks(100, n);
    REQUIRE(blocks.size() == static_cast<size_t>(n));
    CHECK(blocks[0] == 100 / n + (100 % n ? 1 : 0));
    CHECK(blocks[n - 1] == 100 / n);
    const Blocks at = seam::collectives::block_offsets(blocks);
    REQUIRE(at.size() == static_cast<size_t>(n) + 1);
    CHECK(at[0] == 0);
    CHECK(at.back() == 100);
    Blocks copy = at;  // copies, then moves, keep every element
    Blocks moved = std::move(copy);
    CHECK(copy.size() == 0);  // NOLINT(bugprone-use-after-move): moves leave it empty
    CHECK(std::equal(moved.begin(), moved.end(), at.begin(), at.end()));
    Blocks assigned(3, 7);
    assigned = moved;
    CHECK(std::equal(assigned.begin(), assigned.end(), at.begin(), at.end()));
    assigned = Blocks(2, 9);
    CHECK(assigned.size() == 2);
    CHECK(assigned[1] == 9);
  }
}

TEST_CASE(
    "slot_place rotates two ranks' single-round data through the slot's first 64 KiB, or four "
    "places up to 128 KiB") {
  using seam::collectives::slot_place;
  constexpr size_t kSlot = 1 << 20;
  using seam::collectives::kScatterPlacedFromBytes;
  for (size_t bytes : {1, 64, 1023})  // small calls stay at the start
    for (uint64_t round = 1; round < 100; ++round) CHECK(slot_place(2, round, bytes, kSlot) == 0);
  for (uint64_t round = 1; round < 100; ++round)  // reduce-scatters' from 2 KiB
    CHECK(slot_place(2, round, 2047, kSlot, kScatterPlacedFromBytes) == 0);
  CHECK(seam::collectives::slot_places(2, 2048, kSlot, kScatterPlacedFromBytes).move());
  CHECK_FALSE(seam::collectives::slot_places(2, 1023, kSlot).move());
  for (size_t bytes : {1024, 2048, 4096, 5000, 16384, 22000, 32768, 40000, 65536}) {
    CAPTURE(bytes);
    std::set<size_t> places;
    for (uint64_t round = 1; round < 400; ++round) {
      const size_t place = slot_place(2, round, bytes, kSlot);
      CHECK(place % 64 == 0);
      CHECK(place + bytes <= (bytes <= 16384 ? 64 * 1024 : 128 * 1024));
      CHECK(place == slot_place(2, round ^ 1, bytes, kSlot));  // both slots of a round pair
      places.insert(place);
    }
    CHECK(places.size() == (bytes <= 16384   ? 64 * 1024 / ((bytes + 63) / 64 * 64)
                            : bytes <= 32768 ? 4
                            : bytes == 40000 ? 3
                                             : 2));
  }
  CHECK(slot_place(2, 7, 70000, kSlot) == 0);  // two of these do not fit the window
  CHECK(slot_place(3, 7, 4096, kSlot) == 0);   // more ranks: always at the start
  CHECK(slot_place(2, 7, 0, kSlot) == 0);
  CHECK(slot_place(2, 9, 4096, 8192) + 4096 <= 8192);  // a slot smaller than the window
}
