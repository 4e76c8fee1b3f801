// Communicators kept in static storage (an engine's global registry) outlive main: the world's
// split ran a shared-memory all-reduce, so its region is cached; exit must still be clean.
#include <cstdio>
#include <memory>
#include <vector>

#include "seam/communicator.h"

namespace {
std::vector<std::shared_ptr<seam::comm::Communicator>> kept;
}

int main() {
  auto world = seam::comm::Communicator::create_world();
  auto group = world->split(0, world->rank());
  float x = 1, y = 0;
  group->all_reduce(&x, &y, 1, seam::DType::f32, seam::ReduceOp::sum).wait();
  if (y != static_cast<float>(world->size())) {
    std::fprintf(stderr, "FAIL: all-reduce gave %g\n", y);
    return 1;
  }
  kept.push_back(world);
  kept.push_back(group);
  std::printf("rank %d: communicators kept past main\n", world->rank());
  return 0;
}
