// Chooses, per call size, between the shared-memory schedules that move plain buffers: through
// the slots (two user-space copies through the caches), single-copy (the kernel reads and
// writes the peers' buffers), and for all-reduces of two ranks, through the slots with each rank
// folding the whole buffer (no shares: at two ranks it moves as many bytes between the cores as
// shares do, for one wait instead of two). Which is faster depends on things only a measurement
// shows: the kernel's copy speed, and where the host placed the ranks' cores (the slots are fast
// between cores close together and slow between far ones, where a single copy from memory is not).
//
// So calls of a size class (collective, power of two of bytes) first run each candidate
// schedule a fixed number of times in a row; rank 0 times them (from the last rank's start) and
// writes the winner into the region, and
// from then on every rank reads it there. Every rank counts its calls per class alike (calls
// come in the same order with the same sizes on every rank), so all run the same schedule
// without a message: a rank reads the winner only from the second call after the exploration,
// by which time rank 0, which wrote it at the end of the last explored call, has published in
// the call between (no rank gets a call ahead of a peer's publication). The first exploration's
// verdict is only tentative: rank 0 marks it so, every rank reads the mark at the same call and
// the class explores once more; the verdict is then taken from the samples of both: one
// exploration alone too often picks the slower schedule, and requiring the second verdict to
// agree would keep the fallback where two better candidates are close. A verdict that keeps the
// fallback is confirmed too, as a class's first exploration runs cold and its first timed calls
// are slow. The classes explore again every kPeriod calls, as the host may move the cores.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/collectives/shm/variant.h"

namespace seam::collectives {

/// Nanoseconds on the steady clock, the one clock of every process of a host: the timestamps
/// the shared region holds (the tuner's start times, when a rank began to sleep).
inline int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class ScheduleTuner {
 public:
  enum class Kind { all_reduce = 0, reduce_scatter = 1, all_gather = 2, broadcast = 3 };
  /// How a call on plain buffers moves its data: one of the first kSchedules ShmVariants.
  using Schedule = ShmVariant;
  static constexpr int kSchedules = 3;  ///< slots, single_copy, slots_whole
  /// Size classes per kind: powers of two of bytes from kFromBytes.
  static constexpr int kClasses = 32;
  /// Bytes of shared decisions a region holds for its tuner (one per kind and class).
  static constexpr size_t kTableBytes = 4 * kClasses;
  /// Calls from this size are tuned; smaller ones always take the slots (one wait, no syscall).
  static constexpr size_t kFromBytes = 64 * 1024;
  /// Explored calls per schedule (a block of each candidate in turn); all of a block's calls
  /// but its first are timed.
  static constexpr uint64_t kSamples = 5;
  /// The most calls of a size class before every rank runs the verdict: the exploration of every
  /// schedule, then the call that still takes the fallback; twice, as a second exploration
  /// confirms the first's verdict.
  static constexpr int kSettlingCalls = 2 * (kSamples * kSchedules + 1);

  /// One call's choice; hand it back to done() when the call ends.
  struct Choice {
    Schedule schedule = Schedule::slots;
    bool timed = false;  ///< an exploration call on the deciding rank
    bool exploring = false;  ///< an exploration call, on every rank
    Schedule fallback = Schedule::slots;
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
  /// The schedule for a call of `bytes` of `kind`, one of `candidates` (alike on every rank;
  /// explored in this order); `fallback` where nothing is measured yet.
  Choice choose(Kind kind, size_t bytes, std::span<const Schedule> candidates, Schedule fallback);
  /// Records an exploration call's time; the last one of the first round asks for a second
  /// round, whose last one decides from both.
  void done(const Choice& choice);
  /// The decision from the median time per byte of each schedule's timed calls (kUnmeasured
  /// where it did not run): another must be more than 10% faster than the fallback to replace
  /// it. The median, not the fastest: a schedule that is fast at best but slow as often loses
  /// to a steady one.
  static Schedule decide(const double (&typical)[kSchedules], Schedule fallback);
  /// The time per byte of a schedule that did not run in an exploration.
  static constexpr double kUnmeasured = 1e300;

 private:
  static constexpr uint64_t kPeriod = 4096;
  struct Entry {
    uint64_t calls = 0;     // calls since the current exploration began
    uint64_t explored = 0;  // calls of the current exploration: kSamples per candidate
    bool confirming = false;  // the current exploration confirms a verdict that left the fallback
    // ns per byte, of the exploration and its confirmation (rank 0)
    std::array<std::array<double, 2 * (kSamples - 1)>, kSchedules> samples{};
    std::array<unsigned, kSchedules> taken{};  // samples per schedule
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
