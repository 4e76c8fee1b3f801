// Threads that take parts of a rank's copies and folds in large shared-memory calls, on cores its
// rank leaves idle. One thread copies at a per-core rate, well below what the memory system
// gives two threads a rank. While a call holds them (begin_call to end_call) helpers poll for
// parts, yielding their core between looks once a look found none for a while, and sleep only
// after kCallIdle without work (a wait for the peers inside a call may be long, and a slept vCPU
// is slow to run again); outside calls they sleep on a futex after kIdle.
#pragma once

#include <chrono>
#include <functional>

namespace seam::collectives::helper_threads {

/// The most helpers a process starts.
constexpr int kMax = 7;
/// How long an idle helper polls before it sleeps, outside calls and inside one.
constexpr std::chrono::microseconds kIdle{500}, kCallIdle{5000};

/// Starts helpers until the process has `count` (at most kMax); they live until it exits.
void ensure(int count);
/// Runs work(0) ... work(parts - 1), each once, on the calling thread and on the helpers;
/// returns when every part has returned, rethrowing the first exception one threw. A call from
/// inside a part, or while another thread's job runs, runs its parts on the calling thread.
void run(int parts, const std::function<void(int part)>& work);
/// A call that will hand out parts starts: sleeping helpers wake (their wake-up overlaps the
/// call's first wait) and poll through its waits.
void begin_call();
/// A call that began ends.
void end_call();

}  // namespace seam::collectives::helper_threads
