#include "tools/perf/membw.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/reduce/reduce.h"
#include "seam/tensor.h"
#include "transports/shm/process_memory.h"

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

/// What a rank tells the others: its machine (the kernel's boot id) and the cores it may use.
struct Placement {
  size_t machine;
  cpu_set_t cores;
};

/// Threads each rank copies with: the cores its machine's ranks may run on (the union of their
/// affinities, as Seam counts them for its helper threads) shared out among those ranks, at
/// least one. The figure is then the machine's bandwidth, which helper threads reach for where
/// cores are spare, not one core's a rank. (Collective.)
int copy_threads(comm::Communicator& comm) {
  Placement mine{};
  std::ifstream boot_id("/proc/sys/kernel/random/boot_id");
  std::string machine;
  std::getline(boot_id, machine);
  mine.machine = std::hash<std::string>{}(machine);
  if (sched_getaffinity(0, sizeof mine.cores, &mine.cores) != 0) CPU_ZERO(&mine.cores);
  std::vector<Placement> all(static_cast<size_t>(comm.size()));
  comm.all_gather(&mine, all.data(), sizeof mine, DType::u8).wait();
  cpu_set_t cores;
  CPU_ZERO(&cores);
  int on_machine = 0;
  for (const Placement& p : all) {
    if (p.machine != mine.machine) continue;
    ++on_machine;
    CPU_OR(&cores, &cores, &p.cores);
  }
  return std::max(1, CPU_COUNT(&cores) / std::max(1, on_machine));
}

/// How a thread copies its part; false where it could not.
using CopyFn = bool (*)(char* dst, const char* src, size_t bytes);

bool user_copy(char* dst, const char* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return true;
}

/// The kernel's cross-process copy, in the pieces the single-copy schedules read at two ranks
/// (256 KiB a call), from this very process: the kernel pins and copies a peer's pages alike.
/// False where process_vm_readv is not permitted.
bool kernel_copy(char* dst, const char* src, size_t bytes) {
  constexpr size_t kPiece = 256 * 1024;
  for (size_t at = 0; at < bytes; at += kPiece)
    if (shm::read_process_memory(getpid(), src + at, dst + at, std::min(kPiece, bytes - at)) != 0)
      return false;
  return true;
}

/// `copy` of `bytes` split across `threads` threads that start together.
class ParallelCopy {
 public:
  ParallelCopy(CopyFn copy, char* dst, const char* src, size_t bytes, int threads)
      : copy_(copy), dst_(dst), src_(src), bytes_(bytes), threads_(threads) {
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
  /// Whether every thread copied its part.
  bool run() {
    done_.store(0, std::memory_order_relaxed);
    go_.fetch_add(1, std::memory_order_release);
    copy_part(0);
    while (done_.load(std::memory_order_acquire) < threads_ - 1) std::this_thread::yield();
    return !failed_.load(std::memory_order_acquire);
  }

 private:
  void copy_part(int t) {
    const size_t begin = bytes_ / threads_ * t, end = t + 1 == threads_ ? bytes_ : bytes_ / threads_ * (t + 1);
    if (!copy_(dst_ + begin, src_ + begin, end - begin))
      failed_.store(true, std::memory_order_release);
  }
  CopyFn copy_;
  char* dst_;
  const char* src_;
  size_t bytes_;
  int threads_;
  std::atomic<int> go_{0}, done_{0};
  std::atomic<bool> stop_{false}, failed_{false};
  std::vector<std::thread> workers_;
};

/// Bytes read + written per second by `copy` on all ranks at once, each with `threads` threads,
/// best of kRepeats; 0 where a rank could not copy. Collective.
double copy_rate(comm::Communicator& comm, CopyFn copy_fn, size_t bytes, int threads) {
  Buffer source(bytes), destination(bytes);  // zero-filled: pages already faulted in
  ParallelCopy copy(copy_fn, static_cast<char*>(destination.data()),
                    static_cast<const char*>(source.data()), bytes, threads);
  double failed = copy.run() ? 0 : 1;
  comm.all_reduce(&failed, &failed, 1, DType::f64, ReduceOp::max).wait();
  if (failed > 0) return 0;
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
  return 2.0 * bytes * comm.size() / best;
}

/// How a rank moves its footprint: reads it (memchr for a byte the zero-filled buffer lacks: the
/// C library's widest loads), or copies its first half onto the second, with memcpy or with the
/// reduction kernels' streaming stores (no read of the destination lines first).
enum class Move { read, copy, streaming_copy };

/// Moves `bytes` `times` times. The barrier keeps the compiler from taking a call out of the loop.
bool move_over(char* data, size_t bytes, int times, Move move) {
  bool found = false;
  for (int i = 0; i < times; ++i) {
    asm volatile("" : : "r"(data) : "memory");
    if (move == Move::read)
      found |= std::memchr(data, 1, bytes) != nullptr;
    else if (move == Move::copy)
      std::memcpy(data + bytes / 2, data, bytes / 2);
    else
      kernels::copy(data + bytes / 2, data, bytes / 2, kernels::Store::streaming);
  }
  return found;
}

/// This rank's rate of move_over with `threads` threads, each moving its part `times` times once
/// all have started: the bytes read plus written over the slowest thread's time.
double rank_rate(char* data, size_t bytes, int threads, int times, Move move) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false}, found{false};
  std::vector<double> seconds(static_cast<size_t>(threads));
  auto part = [&](int t) {
    const size_t begin = bytes / threads * t, end = t + 1 == threads ? bytes : bytes / threads * (t + 1);
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    if (move_over(data + begin, end - begin, times, move)) found = true;
    seconds[static_cast<size_t>(t)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back(part, t);
  while (ready.load() < threads - 1) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  part(0);
  for (auto& w : workers) w.join();
  const double slowest = *std::max_element(seconds.begin(), seconds.end());
  return found || slowest <= 0 ? 0 : static_cast<double>(bytes) * times / slowest;
}

}  // namespace

double bound_rate(comm::Communicator& comm, size_t bytes, int threads) {
  bytes = std::max<size_t>(bytes, 128);
  // Zero-filled (pages already faulted in), on huge pages where the kernel gives them: fewer TLB
  // misses than any buffer a row may have.
  Buffer buffer(bytes, Pages::huge);
  char* data = static_cast<char*>(buffer.data());
  // About 16 MiB a measurement and two passes at least, so that the clock's and the threads'
  // start are noise; the best of more repeats than the copy bandwidth's, as W must not fall short.
  const int times = static_cast<int>(std::clamp<size_t>((size_t{16} << 20) / bytes, 2, 1 << 20));
  constexpr int kBoundRepeats = 9;
  double best = 0;
  for (Move move : {Move::read, Move::copy, Move::streaming_copy}) {
    move_over(data, bytes, 1, move);  // into the cache
    for (int t : {1, threads}) {
      if (t > 1 && bytes / static_cast<size_t>(t) < 4096) break;  // parts too small to split
      for (int i = 0; i < kBoundRepeats; ++i) {
        comm.barrier().wait();
        best = std::max(best, rank_rate(data, bytes, t, times, move));
      }
    }
  }
  // Each rank's best, summed: ranks that did not overlap exactly only raise the sum.
  comm.all_reduce(&best, &best, 1, DType::f64, ReduceOp::sum).wait();
  return best;
}

CopyBandwidth measure_copy_bandwidth(comm::Communicator& comm) {
  const size_t bytes = buffer_bytes();
  const int threads = copy_threads(comm);
  return {copy_rate(comm, user_copy, bytes, threads), copy_rate(comm, kernel_copy, bytes, threads),
          threads};
}

}  // namespace seam::perf
