// Integration check under mpirun (or plain processes with the TCP store): the whole collective
// matrix of collective_cases.h through the Communicator on real processes, on the world and on
// split sub-groups (even and odd ranks). Prints each failing case and exits non-zero if any
// rank saw a wrong result or an error. With --shared-memory every buffer lies in
// SharedHostMemory (the zero-copy schedules); with --shared-outputs only the outputs (the
// inputs stay plain out of place: gathers write their own blocks, reductions take the plain
// buffers' schedules). With --expect-algorithm NAME the world's calls
// that can take that algorithm (selection.h) must, so a test of a path fails if it is not
// taken; with --expect-all-reduce NAME, the world's all-reduces.
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "runtime/collectives/selection.h"
#include "seam/communicator.h"
#include "test/collectives/collective_cases.h"

namespace seam::test {
namespace {

constexpr Kind kKinds[] = {Kind::all_reduce,  Kind::reduce_scatter, Kind::reduce_scatterv,
                           Kind::all_gather,  Kind::all_gatherv,    Kind::broadcast,
                           Kind::scatterv};

/// Whether calls of `kind` can take algorithm `name` (halving is the all-reduce's alone;
/// scatterv has one schedule).
bool can_take(Kind kind, std::string_view name) {
  if (kind == Kind::scatterv) return false;
  return name != "halving" || kind == Kind::all_reduce;
}

/// Runs every case on `comm`; returns the number of failures on this rank. With `expected`,
/// a call that could take it and took another algorithm fails too.
int run_matrix(comm::Communicator& comm, const char* label, bool large, SharedBuffers shared,
               const char* expected = nullptr, bool only_all_reduce = false) {
  int failures = 0;
  for (Kind kind : kKinds)
    for_each_case(kind, comm.size(), large, [&](const Case& c) {
      RankCase rc(c, comm.rank(), shared);
      rc.launch(comm).wait();
      long wrong = rc.first_wrong();
      if (wrong != -1 && ++failures <= 10)
        std::fprintf(stderr, "FAIL [%s] %s: rank %d, first wrong element %ld\n", label,
                     describe(c).c_str(), comm.rank(), wrong);
      const std::string_view took = collectives::algorithm_name(collectives::last_algorithm());
      const bool checked =
          expected && (only_all_reduce ? kind == Kind::all_reduce : can_take(kind, expected));
      if (checked && took != expected && ++failures <= 10)
        std::fprintf(stderr, "FAIL [%s] %s: rank %d took %s, expected %s\n", label,
                     describe(c).c_str(), comm.rank(), std::string(took).c_str(), expected);
    });
  comm.barrier().wait();
  return failures;
}

}  // namespace
}  // namespace seam::test

int main(int argc, char** argv) {
  using namespace seam;
  test::SharedBuffers shared = test::SharedBuffers::none;
  const char* expected = nullptr;
  bool only_all_reduce = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--shared-memory") == 0) shared = test::SharedBuffers::both;
    if (std::strcmp(argv[i], "--shared-outputs") == 0) shared = test::SharedBuffers::output;
    if (std::strcmp(argv[i], "--expect-algorithm") == 0 && i + 1 < argc) expected = argv[++i];
    if (std::strcmp(argv[i], "--expect-all-reduce") == 0 && i + 1 < argc) {
      expected = argv[++i];
      only_all_reduce = true;
    }
  }
  try {
    auto world = comm::Communicator::create_world();
    int failures = test::run_matrix(*world, "world", true, shared, expected, only_all_reduce);
    if (world->size() >= 3) {
      // Sub-groups: group-local ranks map to other world ranks.
      auto half = world->split(world->rank() % 2, -world->rank());
      failures += test::run_matrix(*half, "split", false, shared);
    }
    int total = failures;
    world->all_reduce(&total, &total, 1, DType::i32, ReduceOp::sum).wait();
    const std::string_view all_reduce = collectives::algorithm_name(collectives::last_algorithm());
    if (world->rank() == 0)
      std::printf("collectives_check: %d ranks, transport %s%s, all-reduce %s: %s (%d failures)\n",
                  world->size(), world->transport_name().c_str(),
                  shared == test::SharedBuffers::both     ? ", SharedHostMemory buffers"
                  : shared == test::SharedBuffers::output ? ", outputs in SharedHostMemory"
                                                          : "",
                  std::string(all_reduce).c_str(), total == 0 ? "OK" : "FAILED", total);
    return total == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collectives_check: %s\n", e.what());
    return 1;
  }
}
