// Algorithm selection with the built-in thresholds (this test runs without SEAM_ALGO and
// SEAM_SMALL_MSG_BYTES).
#include <doctest/doctest.h>

#include "runtime/collectives/selection.h"

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
