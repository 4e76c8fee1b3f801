#include "tools/perf/membw.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

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

/// Threads each rank copies with: the cores it may run on shared out among the ranks of its
/// host, at least one. The figure is then the machine's bandwidth, which Seam's helper threads
/// reach for where cores are spare, not one core's a rank. (Collective.)
int copy_threads(comm::Communicator& comm) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  const size_t hash = std::hash<std::string>{}(name);
  const int32_t mine[2] = {static_cast<int32_t>(hash), static_cast<int32_t>(hash >> 32)};
  std::vector<int32_t> all(2 * static_cast<size_t>(comm.size()));
  comm.all_gather(mine, all.data(), 2, DType::i32).wait();
  int on_host = 0;
  for (int r = 0; r < comm.size(); ++r) on_host += all[2 * r] == mine[0] && all[2 * r + 1] == mine[1];
  cpu_set_t set;
  const int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return std::max(1, cores / std::max(1, on_host));
}

/// memcpy of `bytes` split across `threads` threads that start together.
class ParallelCopy {
 public:
  ParallelCopy(char* dst, const char* src, size_t bytes, int threads)
      : dst_(dst), src_(src), bytes_(bytes), threads_(threads) {
    for (int t = 1; t < threads_; ++t)
      workers_.emplace_back([this, t] {
        for (int round = 1;; ++round) {
          while (go_.load(std::memory_order_acquire) < round) std::this_thread::yield();
          if (stop_.load(std::memory_order_acquire)) return;
          copy_part(t);
          done_.fetch_add(1, std::memory_order_release);
        }
      });
  }
  ~ParallelCopy() {
    stop_.store(true, std::memory_order_release);
    go_.fetch_add(1, std::memory_order_release);
    for (auto& w : workers_) w.join();
  }
  void run() {
    done_.store(0, std::memory_order_relaxed);
    go_.fetch_add(1, std::memory_order_release);
    copy_part(0);
    while (done_.load(std::memory_order_acquire) < threads_ - 1) std::this_thread::yield();
  }

 private:
  void copy_part(int t) {
    const size_t begin = bytes_ / threads_ * t, end = t + 1 == threads_ ? bytes_ : bytes_ / threads_ * (t + 1);
    std::memcpy(dst_ + begin, src_ + begin, end - begin);
  }
  char* dst_;
  const char* src_;
  size_t bytes_;
  int threads_;
  std::atomic<int> go_{0}, done_{0};
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace

CopyBandwidth measure_copy_bandwidth(comm::Communicator& comm) {
  const size_t bytes = buffer_bytes();
  const int threads = copy_threads(comm);
  Buffer source(bytes), destination(bytes);  // zero-filled: pages already faulted in
  ParallelCopy copy(static_cast<char*>(destination.data()), static_cast<const char*>(source.data()),
                    bytes, threads);
  copy.run();
  double best = 1e30;
  for (int i = 0; i < kRepeats; ++i) {
    comm.barrier().wait();
    auto start = std::chrono::steady_clock::now();
    copy.run();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The slowest rank sets the pace of a concurrent copy.
    comm.all_reduce(&seconds, &seconds, 1, DType::f64, ReduceOp::max).wait();
    best = std::min(best, seconds);
  }
  return {2.0 * bytes * comm.size() / best, threads};
}

}  // namespace seam::perf
