#include "tools/perf/membw.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "layouts/tensor.h"

namespace seam::perf {
namespace {

constexpr size_t kBytes = size_t{128} << 20;  // well past a 32 MiB L3
constexpr int kRepeats = 5;

}  // namespace

double measure_copy_bandwidth(comm::Communicator& comm) {
  Buffer source(kBytes), destination(kBytes);  // zero-filled: pages already faulted in
  std::memcpy(destination.data(), source.data(), kBytes);
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    comm.barrier().wait();
    auto start = std::chrono::steady_clock::now();
    std::memcpy(destination.data(), source.data(), kBytes);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The slowest rank sets the pace of a concurrent copy.
    comm.all_reduce(&seconds, &seconds, 1, DType::f64, ReduceOp::max).wait();
    best = std::min(best, seconds);
  }
  return 2.0 * kBytes * comm.size() / best;
}

}  // namespace seam::perf
