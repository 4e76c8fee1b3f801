// One rank of the fault test: a loop of all-reduces in which rank --victim kills itself
// (SIGKILL, no clean-up) at iteration --at. Every survivor must see a CommError naming a peer and
// exit with status 3; seam_local_launcher checks the statuses and how soon after the death.
//   comm_fault_rank --victim R --at K [--iters N] [--count C]
// --victim -1: nobody dies (a link is cut from outside instead); loops until an error.
// --linger-ms L: after the error, stay alive L ms before exiting (as an engine that reports and
// cleans up would); peers must then learn of the failure from its abort notice, not its exit.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "layouts/errors.h"
#include "runtime/comm/communicator.h"

int main(int argc, char** argv) {
  int victim = 1, at = 20, iters = 1000000, linger_ms = 0;
  size_t count = 4096;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--victim") victim = std::atoi(argv[i + 1]);
    else if (a == "--at") at = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::atoi(argv[i + 1]);
    else if (a == "--count") count = static_cast<size_t>(std::atol(argv[i + 1]));
    else if (a == "--linger-ms") linger_ms = std::atoi(argv[i + 1]);
  }
  int rank = -1, i = 0;
  try {
    auto world = seam::comm::Communicator::create_world();
    rank = world->rank();
    std::vector<float> in(count, 1.0f), out(count);
    for (; i < iters; ++i) {
      if (rank == victim && i == at) raise(SIGKILL);
      world->all_reduce(in.data(), out.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
      if (out[0] != static_cast<float>(world->size())) {
        std::fprintf(stderr, "[rank %d] wrong result %f\n", rank, out[0]);
        return 6;
      }
    }
  } catch (const seam::CommError& e) {
    std::fprintf(stderr, "[rank %d] CommError at iteration %d (peer %d): %s\n", rank, i, e.peer(), e.what());
    if (linger_ms) std::this_thread::sleep_for(std::chrono::milliseconds(linger_ms));
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] unexpected error at iteration %d: %s\n", rank, i, e.what());
    return 5;
  }
  std::fprintf(stderr, "[rank %d] finished %d iterations without an error\n", rank, iters);
  return 4;
}
