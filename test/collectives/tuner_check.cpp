// Integration check under mpirun: the shared-memory schedule tuner (shm/tuner.h) makes every
// rank run the same schedule through its exploration, its verdict and its next exploration,
// even when the ranks reach their calls at different times. Each rank sleeps before some calls
// (a different pattern per rank) and interleaves two size classes of all-reduce, reduce-scatter
// and all-gather on plain buffers; every result is checked, and a rank that ran another schedule
// than its peers would get a MismatchError.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>

#include "seam/communicator.h"
#include "test/collectives/collective_cases.h"

namespace {

using seam::DType;
using seam::ReduceOp;
using seam::test::Kind;

/// Runs one call of each collective with blocks of `block` int32 elements per rank (the shared
/// test matrix's inputs and references); returns how many results were wrong.
long run_calls(seam::comm::Communicator& comm, size_t block) {
  const int n = comm.size();
  long wrong = 0;
  for (Kind kind : {Kind::all_reduce, Kind::reduce_scatter, Kind::all_gather}) {
    seam::test::RankCase c({kind, n, kind == Kind::all_reduce ? block * n : block, DType::i32}, comm.rank());
    c.launch(comm).wait();
    wrong += c.first_wrong() >= 0;
  }
  return wrong;
}

}  // namespace

int main() {
  try {
    auto world = seam::comm::Communicator::create_world();
    const int me = world->rank();
    long wrong = 0;
    // 40 rounds: each size class (24 Ki and 160 Ki elements per rank, 96 KiB to 640 KiB per
    // block) passes its 10-15 explored calls and the call after them, twice where a second
    // exploration confirms a verdict, and 8-29 decided ones.
    for (int round = 0; round < 40; ++round)
      for (size_t block : {size_t{24} << 10, size_t{160} << 10}) {
        if ((round + me) % 3 == 0) usleep(200 * static_cast<useconds_t>(1 + me));
        wrong += run_calls(*world, block);
      }
    int32_t total = static_cast<int32_t>(std::min<long>(wrong, 1 << 20));
    world->all_reduce(&total, &total, 1, DType::i32, ReduceOp::sum).wait();
    if (me == 0)
      std::printf("tuner_check: %d ranks: %s (%ld wrong results)\n", world->size(),
                  total == 0 ? "OK" : "FAILED", static_cast<long>(total));
    return total == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tuner_check: %s\n", e.what());
    return 1;
  }
}
