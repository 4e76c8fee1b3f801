// Threads that take parts of a rank's copies and folds in large shared-memory calls, on cores its
// rank leaves idle. One thread copies at a per-core rate (10-12 GB/s at 8 ranks on the 16-core
// GPU host), well below what the memory system gives two threads a rank (memcpy, all at once:
// 8 processes 82-95 GB/s, 16 processes 117-139). While a call holds them (begin_call to
// end_call) helpers poll for parts, yielding their core between looks once a look found none
// for a while (a wait for the peers inside a call may be long, and a slept vCPU took 100-250 us
// to run again on the GPU host); outside calls they sleep on a futex after 500 us.
#pragma once

#include <functional>

namespace seam::collectives {

/// The process's helper threads (a process-wide pool, grown on demand, never shrunk).
class HelperThreads {
 public:
  /// The pool, with at least `count` helpers started (at most kMax).
  static HelperThreads& at_least(int count);
  static constexpr int kMax = 7;
  /// Runs work(0) ... work(parts - 1), each once, on the calling thread and on the helpers;
  /// returns when every part has returned, rethrowing the first exception one threw.
  void run(int parts, const std::function<void(int part)>& work);
  /// A call that will hand out parts starts: sleeping helpers wake (their wake-up overlaps the
  /// call's first wait), and none sleeps until every such call ended.
  void begin_call();
  /// The call that began last ended.
  void end_call();

 private:
  HelperThreads() = default;
  void grow(int count);
};

}  // namespace seam::collectives
