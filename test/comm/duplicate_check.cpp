// Integration check under mpirun: a communicator and its duplicate driven from two threads at
// once. Each thread runs its own all-reduces and all-gathers (distinct values, sizes through the
// messages and the shared-memory schedules); both must be exact, and the duplicate's sub-group
// must work on its thread too.
//   comm_duplicate_check [--calls N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "seam/communicator.h"
#include "seam/errors.h"

namespace {

// calls all-reduces and all-gathers on `c`; returns how many results were wrong.
int drive(seam::comm::Communicator& c, int calls, float base) {
  const int n = c.size(), me = c.rank();
  int wrong = 0;
  for (int i = 0; i < calls; ++i) {
    const size_t count = size_t{1} << (4 + i % 14);  // 16 .. 128 Ki floats
    std::vector<float> v(count, base + static_cast<float>(me + i % 7));
    c.all_reduce(v.data(), v.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
    const float want = static_cast<float>(n) * (base + static_cast<float>(i % 7)) + static_cast<float>(n * (n - 1) / 2);
    wrong += v.front() != want || v.back() != want;
    const int mine = static_cast<int>(base) * 1000 + me * 10 + i % 10;
    std::vector<int> all(static_cast<size_t>(n));
    c.all_gather(&mine, all.data(), 1, seam::DType::i32).wait();
    for (int r = 0; r < n; ++r) wrong += all[static_cast<size_t>(r)] != static_cast<int>(base) * 1000 + r * 10 + i % 10;
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 300;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::atoi(argv[i + 1]);
  try {
    auto world = seam::comm::Communicator::create_world();
    auto twin = world->duplicate();
    if (twin->size() != world->size() || twin->rank() != world->rank()) {
      std::fprintf(stderr, "rank %d: the duplicate has rank %d of %d\n", world->rank(), twin->rank(), twin->size());
      return 1;
    }
    int wrong_twin = 0;
    std::exception_ptr failure;
    std::thread other([&] {
      try {
        wrong_twin = drive(*twin, calls, 2.0f);
        // A sub-group of the duplicate, made and used on the duplicate's thread.
        auto half = twin->split(twin->rank() % 2, twin->rank());
        wrong_twin += drive(*half, calls / 10, 3.0f);
      } catch (...) {
        failure = std::current_exception();
      }
    });
    const int wrong_world = drive(*world, calls, 1.0f);
    other.join();
    if (failure) std::rethrow_exception(failure);
    world->barrier().wait();
    std::printf("rank %d: %d calls on the world and %d on its duplicate at once (%s): %d and %d wrong\n", world->rank(),
                calls, calls + calls / 10, twin->transport_name().c_str(), wrong_world, wrong_twin);
    return wrong_world + wrong_twin == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "comm_duplicate_check: %s\n", e.what());
    return 1;
  }
}
