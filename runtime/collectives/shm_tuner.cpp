#include "runtime/collectives/shm_tuner.h"

#include <algorithm>
#include <bit>
#include <chrono>

#include "layouts/log.h"

namespace seam::collectives {
namespace {

// What the shared table holds per class.
constexpr uint8_t kUndecided = 0, kSlots = 1, kSingleCopy = 2;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* kind_name(int entry) {
  static const char* const names[] = {"all_reduce", "reduce_scatter", "all_gather"};
  return names[entry / ScheduleTuner::kClasses];
}

}  // namespace

ScheduleTuner::Choice ScheduleTuner::choose(Kind kind, size_t bytes, bool fallback) {
  Choice choice{fallback};
  choice.fallback = fallback;
  choice.bytes = bytes;
  if (bytes < kFromBytes || table_ == nullptr) return choice;
  const int size_class = std::min(static_cast<int>(std::bit_width(bytes / kFromBytes)) - 1, kClasses - 1);
  choice.entry = static_cast<int>(kind) * kClasses + size_class;
  const uint64_t call = entries_[choice.entry].calls++ % kPeriod;
  if (call < 2 * kSamples) {
    // A block of calls per schedule, the first of each untimed: a call leaves the caches in
    // the state its schedule's next call finds (alternating, the single-copy calls found the
    // slots' state and lost to them on the Xeon at 2 ranks, 1 MiB all-gather, where in a row
    // they were faster).
    choice.single_copy = call >= kSamples;
    choice.timed = rank_ == 0 && call % kSamples != 0;
    choice.start_slot = static_cast<unsigned>(explored_++ % 2);
    starts_[2 * rank_ + choice.start_slot].store(steady_ns(), std::memory_order_relaxed);
  } else if (call > 2 * kSamples) {
    const uint8_t decided = table_[choice.entry].load(std::memory_order_acquire);
    if (decided != kUndecided) choice.single_copy = decided == kSingleCopy;
  }
  return choice;
}

void ScheduleTuner::done(const Choice& choice) {
  if (!choice.timed) return;
  Entry& e = entries_[choice.entry];
  // Every rank stored its start before its first publication in the call, which this rank
  // has seen (acquire) before the call could end.
  int64_t last_start = 0;
  for (int r = 0; r < ranks_; ++r)
    last_start = std::max(last_start, starts_[2 * r + choice.start_slot].load(std::memory_order_relaxed));
  // Per byte: a class holds calls of up to twice each other's size.
  double& best = e.best[choice.single_copy ? 1 : 0];
  best = std::min(best, static_cast<double>(steady_ns() - last_start) / choice.bytes);
  if (e.calls % kPeriod != 2 * kSamples) return;
  const bool single_copy = prefer_single_copy(e.best[0], e.best[1], choice.fallback);
  table_[choice.entry].store(single_copy ? kSingleCopy : kSlots, std::memory_order_release);
  log().debug("{}: calls of {} KiB to {} KiB take {} (fastest through the slots {:.3f} ns/B, "
              "single-copy {:.3f} ns/B)",
              kind_name(choice.entry), (kFromBytes << (choice.entry % kClasses)) / 1024,
              (kFromBytes << (choice.entry % kClasses + 1)) / 1024,
              single_copy ? "single-copy" : "the slots", e.best[0], e.best[1]);
  e.best[0] = e.best[1] = kUnmeasured;
}

bool ScheduleTuner::prefer_single_copy(double slots, double single_copy, bool fallback) {
  // Within the margin the fallback stays: samples of calls of tens of microseconds move by
  // that much from one to the next.
  constexpr double margin = 1.1;
  return fallback ? single_copy < slots * margin : single_copy * margin < slots;
}

}  // namespace seam::collectives
