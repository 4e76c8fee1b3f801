#include "tools/perf/membw.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "layouts/tensor.h"

namespace seam::perf {
namespace {

constexpr int kRepeats = 5;

/// Per rank: twice the last-level cache, 128 to 256 MiB (all ranks' buffers together then
/// exceed the cache many times over), so the copy measures memory, not cache.
size_t buffer_bytes() {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  size_t bytes = l3 > 0 ? 2 * static_cast<size_t>(l3) : 0;
  return std::clamp(bytes, size_t{128} << 20, size_t{256} << 20);
}

}  // namespace

double measure_copy_bandwidth(comm::Communicator& comm) {
  const size_t bytes = buffer_bytes();
  Buffer source(bytes), destination(bytes);  // zero-filled: pages already faulted in
  std::memcpy(destination.data(), source.data(), bytes);
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    comm.barrier().wait();
    auto start = std::chrono::steady_clock::now();
    std::memcpy(destination.data(), source.data(), bytes);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The slowest rank sets the pace of a concurrent copy.
    comm.all_reduce(&seconds, &seconds, 1, DType::f64, ReduceOp::max).wait();
    best = std::min(best, seconds);
  }
  return 2.0 * bytes * comm.size() / best;
}

}  // namespace seam::perf
