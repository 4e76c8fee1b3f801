// Integration check under mpirun: the shared-memory schedule tuner (shm_tuner.h) makes every
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
#include <vector>

#include "runtime/comm/communicator.h"

namespace {

using seam::DType;
using seam::ReduceOp;

/// Element i of rank r's input.
int32_t input(int r, size_t i) { return static_cast<int32_t>((i * 7 + r * 1000003) % 65521); }

/// Returns the number of wrong elements of one call of each collective with blocks of `block`
/// int32 elements per rank.
long run_calls(seam::comm::Communicator& comm, size_t block) {
  const int n = comm.size(), me = comm.rank();
  const size_t total = block * n;
  std::vector<int32_t> send(total), recv(total);
  for (size_t i = 0; i < total; ++i) send[i] = input(me, i);
  long wrong = 0;

  comm.all_reduce(send.data(), recv.data(), total, DType::i32, ReduceOp::sum).wait();
  for (size_t i = 0; i < total; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += input(r, i);
    wrong += recv[i] != sum;
  }
  comm.reduce_scatter(send.data(), recv.data(), block, DType::i32, ReduceOp::sum).wait();
  for (size_t i = 0; i < block; ++i) {
    int64_t sum = 0;
    for (int r = 0; r < n; ++r) sum += input(r, me * block + i);
    wrong += recv[i] != sum;
  }
  comm.all_gather(send.data(), recv.data(), block, DType::i32).wait();
  for (size_t i = 0; i < total; ++i) wrong += recv[i] != input(static_cast<int>(i / block), i % block);
  return wrong;
}

}  // namespace

int main() {
  try {
    auto world = seam::comm::Communicator::create_world();
    const int me = world->rank();
    long wrong = 0;
    // 40 rounds: each size class (24 Ki and 160 Ki elements per rank, 96 KiB to 640 KiB per
    // block) passes its 10-15 explored calls, the call after them and 24-29 decided ones.
    for (int round = 0; round < 40; ++round)
      for (size_t block : {size_t{24} << 10, size_t{160} << 10}) {
        if ((round + me) % 3 == 0) usleep(200 * static_cast<useconds_t>(1 + me));
        wrong += run_calls(*world, block);
      }
    int32_t total = static_cast<int32_t>(std::min<long>(wrong, 1 << 20));
    world->all_reduce(&total, &total, 1, DType::i32, ReduceOp::sum).wait();
    if (me == 0)
      std::printf("tuner_check: %d ranks: %s (%ld wrong elements)\n", world->size(),
                  total == 0 ? "OK" : "FAILED", static_cast<long>(total));
    return total == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tuner_check: %s\n", e.what());
    return 1;
  }
}
