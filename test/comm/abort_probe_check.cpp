// The engine's abort probe (what a staged device communicator's progress thread sets): rank 0
// waits in an all-reduce that rank 1 never makes until its probe reports a failure; the call must
// fail at once with that reason, well before the deadline, and rank 1 hear of it.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "runtime/comm/comm_internal.h"
#include "seam/communicator.h"
#include "seam/errors.h"

int main() {
  using namespace seam;
  using Clock = std::chrono::steady_clock;
  auto world = comm::Communicator::create_world();
  world->barrier().wait();
  const auto t0 = Clock::now();
  if (world->rank() == 0) {
    seam::comm::CommunicatorAccess::of(*world).engine->abort_probe = [t0]() -> std::string {
      return Clock::now() - t0 > std::chrono::milliseconds(300) ? "the probe found a failure" : "";
    };
    float x = 1, y = 0;
    try {
      world->all_reduce(&x, &y, 1, DType::f32, ReduceOp::sum).wait();
      std::fprintf(stderr, "FAIL: the all-reduce completed without its peer\n");
      return 1;
    } catch (const CommError& e) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      std::printf("rank 0: failed after %.0f ms: %s\n", ms, e.what());
      if (ms > 2000 || std::string(e.what()).find("the probe found a failure") == std::string::npos) {
        std::fprintf(stderr, "FAIL: not the probe's failure within 2 s\n");
        return 1;
      }
    }
    return 0;
  }
  // Rank 1 makes no call; rank 0's abort reaches its engine, and a later call is refused.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  try {
    world->barrier().wait();
    std::fprintf(stderr, "FAIL: rank 1's barrier completed after rank 0 aborted\n");
    return 1;
  } catch (const CommError& e) {
    std::printf("rank 1: %s\n", e.what());
  }
  return 0;
}
