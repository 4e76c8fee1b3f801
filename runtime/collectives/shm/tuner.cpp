#include <cstdint>
#include "runtime/collectives/shm/tuner.h"

#include <algorithm>
#include <bit>
#include <string>

#include "layouts/log.h"

namespace seam::collectives {
namespace {

// What the shared table holds per class: 0 undecided, else the schedule plus one, with
// kConfirm where that verdict is tentative and the class explores again.
constexpr uint8_t kUndecided = 0;
constexpr uint8_t kConfirm = 0x80;

const char* kind_name(int entry) {
  static const char* const names[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast"};
  return names[entry / ScheduleTuner::kClasses];
}

/// The smallest calls of a table entry's size class, in KiB (for the log).
size_t class_kib(int entry) {
  return (ScheduleTuner::kFromBytes << (entry % ScheduleTuner::kClasses)) / 1024;
}

/// The median of `samples` (kUnmeasured when empty).
double median(std::span<double> samples) {
  if (samples.empty()) return ScheduleTuner::kUnmeasured;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 ? samples[mid] : (samples[mid - 1] + samples[mid]) / 2;
}

/// A median for the log: "-" for a schedule that was not a candidate.
std::string shown(double ns_per_byte) {
  return ns_per_byte == ScheduleTuner::kUnmeasured ? "-" : fmt::format("{:.3f}", ns_per_byte);
}

}  // namespace

ScheduleTuner::Choice ScheduleTuner::choose(Kind kind, size_t bytes,
                                            std::span<const Schedule> candidates, Schedule fallback) {
  Choice choice{fallback};
  choice.fallback = fallback;
  choice.bytes = bytes;
  if (bytes < kFromBytes || table_ == nullptr || candidates.size() < 2) return choice;
  const int size_class = std::min(static_cast<int>(std::bit_width(bytes / kFromBytes)) - 1, kClasses - 1);
  choice.entry = static_cast<int>(kind) * kClasses + size_class;
  Entry& e = entries_[choice.entry];
  const uint64_t explored = kSamples * candidates.size();
  if (e.calls == kPeriod) {  // explore again: the host may have moved the cores
    e.calls = 0;
    e.confirming = false;
  }
  // The first call that reads a verdict finds it marked tentative alike on every rank (rank 0
  // only writes the next one at the end of an exploration), and then starts the confirmation.
  if (e.calls == explored + 1 && !e.confirming &&
      (table_[choice.entry].load(std::memory_order_acquire) & kConfirm)) {
    e.calls = 0;
    e.confirming = true;
  }
  const uint64_t call = e.calls++;
  if (call < explored) {
    // A block of calls per schedule, the first of each untimed: a call leaves the caches in
    // the state its schedule's next call finds (alternating, each schedule would be timed in
    // the other's state, and one faster in a row can lose).
    // A confirmation adds its samples to the first exploration's; a first exploration starts
    // afresh (done() cleared them at the last verdict already; this keeps the samples to two
    // explorations' worth, the array's size, whatever happened before).
    if (call == 0 && !e.confirming) e.taken.fill(0);
    choice.schedule = candidates[call / kSamples];
    choice.exploring = true;
    choice.timed = rank_ == 0 && call % kSamples != 0;
    choice.start_slot = static_cast<unsigned>(explored_++ % 2);
    e.explored = explored;
    starts_[2 * rank_ + choice.start_slot].store(steady_ns(), std::memory_order_relaxed);
  } else if (call > explored) {
    const uint8_t decided = table_[choice.entry].load(std::memory_order_acquire) & ~kConfirm;
    if (decided != kUndecided) choice.schedule = static_cast<Schedule>(decided - 1);
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
  const int s = static_cast<int>(choice.schedule);
  const double ns_per_byte = static_cast<double>(steady_ns() - last_start) / choice.bytes;
  e.samples[s][e.taken[s]++] = ns_per_byte;
  SEAM_LOG_DEBUG("{}: calls of {} KiB to {} KiB, {} explored: {:.3f} ns/B", kind_name(choice.entry),
                 class_kib(choice.entry), 2 * class_kib(choice.entry),
                 shm_variant_name(choice.schedule), ns_per_byte);
  if (e.calls != e.explored) return;
  double typical[kSchedules];
  for (int t = 0; t < kSchedules; ++t)
    typical[t] = median(std::span(e.samples[t].data(), e.taken[t]));
  const Schedule verdict = decide(typical, choice.fallback);
  const bool tentative = !e.confirming;
  if (!tentative) e.taken.fill(0);
  table_[choice.entry].store(
      static_cast<uint8_t>((static_cast<int>(verdict) + 1) | (tentative ? kConfirm : 0)),
      std::memory_order_release);
  SEAM_LOG_DEBUG(
      "{}: calls of {} KiB to {} KiB {} {}{} (median ns/B{}: slots {}, single-copy {}, "
      "slots-whole {})",
      kind_name(choice.entry), class_kib(choice.entry), 2 * class_kib(choice.entry),
      tentative ? "would take" : "take",
      shm_variant_name(verdict), tentative ? ", exploring again to confirm" : "",
      e.confirming ? " of both explorations" : "", shown(typical[0]), shown(typical[1]),
      shown(typical[2]));
}

ScheduleTuner::Schedule ScheduleTuner::decide(const double (&typical)[kSchedules],
                                              Schedule fallback) {
  int fastest = 0;
  for (int s = 1; s < kSchedules; ++s)
    if (typical[s] < typical[fastest]) fastest = s;
  // Within the margin the fallback stays: samples of calls of tens of microseconds move by
  // that much from one to the next.
  constexpr double margin = 1.1;
  return typical[fastest] * margin < typical[static_cast<int>(fallback)]
             ? static_cast<Schedule>(fastest)
             : fallback;
}

}  // namespace seam::collectives
