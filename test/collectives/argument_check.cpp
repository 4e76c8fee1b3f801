// Integration check under mpirun: bad arguments are refused at the call, on the rank that passes
// them, before anything is sent or a sequence number taken. Rank 0 alone makes every bad call
// (null buffers with elements, byte counts and count sums that overflow, a dtype or op outside
// the enums, a dtype without a reduction, buffers that overlap other than in place); then every
// rank makes valid calls, the in-place forms among them, and every result must be right (rank 0
// would be a call out of step with its peers if a refused call had counted).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "seam/errors.h"
#include "seam/communicator.h"

int main() {
  using namespace seam;
  int failures = 0;
  auto world = comm::Communicator::create_world();
  const int n = world->size(), me = world->rank();
  std::vector<float> buf(64, 1.0f), out(64 * static_cast<size_t>(n));
  auto refused = [&](const char* what, auto call, auto tag) {
    using Expected = decltype(tag);
    try {
      call();
      std::fprintf(stderr, "FAIL rank %d: %s was accepted\n", me, what);
      ++failures;
    } catch (const Expected&) {
    } catch (const std::exception& e) {
      std::fprintf(stderr, "FAIL rank %d: %s threw another error: %s\n", me, what, e.what());
      ++failures;
    }
  };
  if (me == 0) {
    float* b = buf.data();
    refused("a null send buffer", [&] { world->all_reduce(nullptr, b, 4, DType::f32, ReduceOp::sum); }, ValueError(""));
    refused("a null receive buffer", [&] { world->all_gather(b, nullptr, 4, DType::f32); }, ValueError(""));
    refused("a byte count that overflows", [&] { world->all_reduce(b, b, SIZE_MAX / 2, DType::f32, ReduceOp::sum); }, ValueError(""));
    refused("a dtype outside the enum", [&] { world->all_reduce(b, b, 4, static_cast<DType>(42), ReduceOp::sum); }, TypeError(""));
    refused("an op outside the enum", [&] { world->all_reduce(b, b, 4, DType::f32, static_cast<ReduceOp>(9)); }, ValueError(""));
    refused("a dtype without a reduction", [&] { world->reduce_scatter(b, b, 4, DType::u8, ReduceOp::sum); }, ValueError(""));
    refused("partly overlapping all-reduce buffers", [&] { world->all_reduce(b, b + 1, 8, DType::f32, ReduceOp::sum); }, ValueError(""));
    refused("an all-gather's send in the wrong place of recv",
            [&] { world->all_gather(out.data() + 1, out.data(), 4, DType::f32); }, ValueError(""));
    std::vector<size_t> huge(static_cast<size_t>(n), 0);
    huge[0] = SIZE_MAX;
    huge[static_cast<size_t>(n) - 1] += 1;
    refused("counts whose sum overflows", [&] { world->reduce_scatterv(b, out.data(), huge, DType::f32, ReduceOp::sum); }, ValueError(""));
    refused("a null broadcast buffer", [&] { world->broadcast(nullptr, 4, DType::f32, 0); }, ValueError(""));
  }
  // Valid calls on every rank, the in-place forms among them.
  for (int i = 0; i < 3; ++i) {
    std::vector<float> v(16, static_cast<float>(me + 1));
    world->all_reduce(v.data(), v.data(), 16, DType::f32, ReduceOp::sum).wait();
    const float sum = static_cast<float>(n * (n + 1) / 2);
    for (float x : v) failures += x != sum;
    std::vector<float> rs(16 * static_cast<size_t>(n), 1.0f);
    world->reduce_scatter(rs.data(), rs.data() + 16 * me, 16, DType::f32, ReduceOp::sum).wait();
    for (int k = 0; k < 16; ++k) failures += rs[16 * static_cast<size_t>(me) + static_cast<size_t>(k)] != static_cast<float>(n);
    std::vector<float> ag(16 * static_cast<size_t>(n), -1.0f);
    for (int k = 0; k < 16; ++k) ag[16 * static_cast<size_t>(me) + static_cast<size_t>(k)] = static_cast<float>(me);
    world->all_gather(ag.data() + 16 * me, ag.data(), 16, DType::f32).wait();
    for (int r = 0; r < n; ++r)
      for (int k = 0; k < 16; ++k) failures += ag[16 * static_cast<size_t>(r) + static_cast<size_t>(k)] != static_cast<float>(r);
  }
  int total = 0;
  world->all_reduce(&failures, &total, 1, DType::i32, ReduceOp::sum).wait();
  if (me == 0) std::printf("argument checks at %d ranks: %d failures\n", n, total);
  return total ? 1 : 0;
}
