// The host-steal arithmetic (/proc/stat's ticks) and the judgement that stands helpers down.
#include <cstdint>
#include <doctest/doctest.h>

#include "runtime/collectives/shm/steal_watch.h"
#include "runtime/exec/host_steal.h"

namespace seam::test {

using collectives::kStealReturn;
using collectives::kStealStandDown;
using collectives::StealWatch;

TEST_CASE("the steal share is the steal ticks over all ticks between two readings") {
  const comm::CpuTicks before{10, 1000}, after{30, 3000};
  CHECK(comm::steal_share(before, after).value() == doctest::Approx(0.01));
  CHECK_FALSE(comm::steal_share(std::nullopt, after));
  CHECK_FALSE(comm::steal_share(before, std::nullopt));
  CHECK_FALSE(comm::steal_share(after, after));                     // no tick passed
  CHECK_FALSE(comm::steal_share(before, comm::CpuTicks{5, 2000}));  // the counter went back
}

TEST_CASE("this machine's ticks can be read") {
  const auto first = comm::cpu_ticks();
  REQUIRE(first);
  CHECK(first->total > 0);
  CHECK(first->steal <= first->total);
}

/// Readings a window apart whose windows have the given steal shares (1000 ticks each).
struct Readings {
  StealWatch watch;
  StealWatch::Clock::time_point now{};
  comm::CpuTicks ticks{0, 0};
  bool first() { return watch.look(now, ticks); }
  bool next(double share, StealWatch::Clock::duration after = StealWatch::kWindow) {
    now += after;
    ticks.steal += static_cast<uint64_t>(share * 1000);
    ticks.total += 1000;
    return watch.look(now, ticks);
  }
};

TEST_CASE("helpers stand down from one share and return below a lower one") {
  Readings r;
  CHECK_FALSE(r.first());  // a baseline only
  CHECK_FALSE(r.next(kStealStandDown / 2));
  CHECK(r.next(kStealStandDown));
  CHECK(r.next(kStealStandDown / 2));  // between the two thresholds: the judgement stays
  CHECK(r.next(kStealReturn));
  CHECK_FALSE(r.next(kStealReturn / 2));
  CHECK_FALSE(r.next(kStealStandDown / 2));
}

TEST_CASE("a reading is due once a window has passed, and a stale one judges nothing") {
  Readings r;
  CHECK(r.watch.due(r.now));  // none yet
  r.first();
  CHECK_FALSE(r.watch.due(r.now + StealWatch::kWindow / 2));
  CHECK(r.watch.due(r.now + StealWatch::kWindow));
  CHECK(r.next(0.05));
  // Minutes without a look: the window would average an old burst, so the watch starts over.
  CHECK_FALSE(r.next(0.05, std::chrono::minutes(3)));
  CHECK(r.next(0.05));
}

TEST_CASE("an unreadable /proc/stat leaves helpers as they are, and is tried once a window") {
  Readings r;
  r.first();
  CHECK(r.next(0.05));
  r.now += StealWatch::kWindow;
  CHECK(r.watch.look(r.now, std::nullopt));  // no share: the judgement stands
  CHECK_FALSE(r.watch.due(r.now + StealWatch::kWindow / 2));
}

TEST_CASE("a first look at the host's steal judges none") {
  CHECK_FALSE(collectives::host_stealing());  // a baseline only
}

}  // namespace seam::test
