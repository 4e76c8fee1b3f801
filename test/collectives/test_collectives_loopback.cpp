// The whole collective matrix (collective_cases.h: every collective x dtype x op x
// in/out-of-place x 1..5 ranks x counts 0, 1, not divisible, multi-MiB x roots) on threads over
// the loopback transport. Registered three times: automatic selection, SEAM_ALGO=direct and
// SEAM_ALGO=ring with small chunks (so both algorithms and the ring's pipelining are covered).
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "seam/errors.h"
#include "runtime/collectives/collectives.h"
#include "test/collectives/collective_cases.h"
#include "test/collectives/group_api.h"
#include "test/collectives/loopback_ranks.h"

namespace seam::test {
namespace {

using collectives::Group;

void run_case(const Case& c) {
  std::vector<std::unique_ptr<RankCase>> ranks(c.ranks);
  run_on_ranks(c.ranks, [&](int r, Group& g) {
    ranks[r] = std::make_unique<RankCase>(c, r);
    GroupApi api{g};
    return ranks[r]->launch(api);
  });
  for (int r = 0; r < c.ranks; ++r) {
    long wrong = ranks[r]->first_wrong();
    INFO(describe(c), ": rank ", r, " first wrong element ", wrong);
    CHECK(wrong == -1);
  }
}

void run_matrix(Kind kind) {
  for (int ranks = 1; ranks <= 5; ++ranks) for_each_case(kind, ranks, true, run_case);
}

}  // namespace

TEST_CASE("all_reduce") { run_matrix(Kind::all_reduce); }
TEST_CASE("reduce_scatter") { run_matrix(Kind::reduce_scatter); }
TEST_CASE("reduce_scatterv (uneven counts, zeros)") { run_matrix(Kind::reduce_scatterv); }
TEST_CASE("all_gather") { run_matrix(Kind::all_gather); }
TEST_CASE("all_gatherv (uneven counts, zeros)") { run_matrix(Kind::all_gatherv); }
TEST_CASE("broadcast from every root") { run_matrix(Kind::broadcast); }
TEST_CASE("scatterv from every root") { run_matrix(Kind::scatterv); }

TEST_CASE("barrier completes at every size") {
  for (int ranks = 1; ranks <= 5; ++ranks)
    run_on_ranks(ranks, [](int, Group& g) { return collectives::barrier(g); });
}

TEST_CASE("ranks that disagree on the count get a MismatchError") {
  std::vector<std::vector<char>> buf{std::vector<char>(40), std::vector<char>(48)};
  CHECK_THROWS_AS(run_on_ranks(2,
                               [&](int r, Group& g) {
                                 size_t count = r == 0 ? 10 : 12;
                                 return collectives::all_reduce(g, buf[r].data(), buf[r].data(),
                                                                count, DType::f32, ReduceOp::sum);
                               }),
                  MismatchError);
}

TEST_CASE("bad arguments are rejected before anything is sent") {
  std::vector<size_t> two{1, 1};
  std::vector<char> buf(64);
  run_on_ranks(3, [&](int, Group& g) {
    CHECK_THROWS_AS(collectives::reduce_scatterv(g, buf.data(), buf.data(), two, DType::f32,
                                                 ReduceOp::sum),
                    ValueError);
    CHECK_THROWS_AS(collectives::all_reduce(g, buf.data(), buf.data(), 4, DType::u8, ReduceOp::sum),
                    ValueError);
    CHECK_THROWS_AS(collectives::broadcast(g, buf.data(), 4, DType::f32, 3), ValueError);
    return collectives::barrier(g);
  });
}

}  // namespace seam::test
