// Chooses, per call size, between the shared-memory schedules that move plain buffers: through
// the slots (two user-space copies through the caches) or single-copy (the kernel reads the
// peers' buffers). Which is faster depends on things only a measurement shows: the kernel's
// copy speed, and where the host placed the ranks' cores (on the EPYC development machine, 1-4
// MiB all-gathers through the slots were 0.65x Open MPI with the vCPUs close together and 4-5x
// with them far apart, where a single copy from memory stays at about 1x).
//
// So calls of a size class (collective, power of two of bytes) first run each schedule a fixed
// number of times in a row; rank 0 times them (from the last rank's start) and writes the
// winner into the region, and
// from then on every rank reads it there. Every rank counts its calls per class alike (calls
// come in the same order with the same sizes on every rank), so all run the same schedule
// without a message: a rank reads the winner only from the second call after the exploration,
// by which time rank 0, which wrote it at the end of the last explored call, has published in
// the call between (no rank gets a call ahead of a peer's publication). The classes explore
// again every kPeriod calls, as the host may move the cores.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace seam::collectives {

class ScheduleTuner {
 public:
  enum class Kind { all_reduce = 0, reduce_scatter = 1, all_gather = 2 };
  /// Size classes per kind: powers of two of bytes from kFromBytes.
  static constexpr int kClasses = 32;
  /// Bytes of shared decisions a region holds for its tuner (one per kind and class).
  static constexpr size_t kTableBytes = 3 * kClasses;
  /// Calls from this size are tuned; smaller ones always take the slots (one wait, no syscall).
  static constexpr size_t kFromBytes = 64 * 1024;

  /// One call's choice; hand it back to done() when the call ends.
  struct Choice {
    bool single_copy = false;
    bool timed = false;  ///< an exploration call on the deciding rank
    bool fallback = false;
    size_t bytes = 0;
    int entry = 0;
    unsigned start_slot = 0;  ///< where the ranks left this call's start times
  };

  /// The region's shared bytes for the tuner: `table`, kTableBytes zeroed; `starts`, two start
  /// times per rank (rank r's at starts[2 r], [2 r + 1]). Rank 0 decides.
  void attach(std::atomic<uint8_t>* table, std::atomic<int64_t>* starts, int ranks, int rank) {
    table_ = table;
    starts_ = starts;
    ranks_ = ranks;
    rank_ = rank;
  }
  /// The schedule for a call of `bytes` of `kind`; `fallback` where nothing is measured yet.
  Choice choose(Kind kind, size_t bytes, bool fallback);
  /// Records an exploration call's time; the last one of a round decides.
  void done(const Choice& choice);
  /// The decision from the fastest time per byte of each schedule: the other one must be more
  /// than 10% faster to replace the fallback.
  static bool prefer_single_copy(double slots, double single_copy, bool fallback);

 private:
  /// Explored calls per schedule (a block of slots, then one of single-copy); the fastest of
  /// each block but its first call counts.
  static constexpr uint64_t kSamples = 5;
  static constexpr double kUnmeasured = 1e300;
  static constexpr uint64_t kPeriod = 4096;
  struct Entry {
    uint64_t calls = 0;
    double best[2] = {kUnmeasured, kUnmeasured};  // ns per byte, [single_copy]
  };
  std::atomic<uint8_t>* table_ = nullptr;
  // Every rank records when it started an explored call; rank 0 times the call from the last
  // rank's start, so the schedule's time is not mixed with how late the peers arrived. A rank
  // is at most one explored call ahead of rank 0's done(), so two slots per rank suffice.
  std::atomic<int64_t>* starts_ = nullptr;
  int ranks_ = 0, rank_ = 0;
  uint64_t explored_ = 0;  // explored calls of every class, alike on every rank
  std::array<Entry, kTableBytes> entries_{};
};

}  // namespace seam::collectives
