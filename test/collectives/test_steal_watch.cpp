// The host-steal arithmetic (/proc/stat's ticks) and the judgement that stands helpers down.
#include <doctest/doctest.h>

#include "runtime/collectives/steal_watch.h"
#include "runtime/comm/host_steal.h"

namespace seam::test {

using collectives::judge_stealing;
using collectives::kStealReturn;
using collectives::kStealStandDown;

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

TEST_CASE("helpers stand down from one share and return below a lower one") {
  CHECK_FALSE(judge_stealing(false, 0.0));
  CHECK_FALSE(judge_stealing(false, kStealStandDown / 2));
  CHECK(judge_stealing(false, kStealStandDown));
  CHECK(judge_stealing(true, kStealStandDown / 2));  // between the two: the judgement stays
  CHECK(judge_stealing(true, kStealReturn));
  CHECK_FALSE(judge_stealing(true, kStealReturn / 2));
  // No measurement (no tick passed, or an unreadable /proc/stat): the last judgement stands.
  CHECK(judge_stealing(true, std::nullopt));
  CHECK_FALSE(judge_stealing(false, std::nullopt));
}

TEST_CASE("a first look at the host's steal judges none") {
  // The first reading is only a baseline: nothing to judge from yet.
  CHECK_FALSE(collectives::host_stealing());
}

}  // namespace seam::test
