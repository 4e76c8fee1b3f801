#include "runtime/collectives/shm/helper_threads.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>
#include <exception>
#include <mutex>
#include <thread>

#include "runtime/exec/cpu_relax.h"

namespace seam::collectives::helper_threads {
namespace {

using Clock = std::chrono::steady_clock;

/// How long a thread that found no part polls without yielding its core.
constexpr auto kPoll = std::chrono::microseconds(20);

struct State {
  // The current job: generation (32 bits) | next unclaimed part (16) | parts (16). Parts are
  // claimed by compare-and-swap on the whole word, so a helper late from an earlier job claims
  // parts of the current one, whose `work` the word's release store published.
  std::atomic<uint64_t> claim{0};
  std::atomic<int> done{0};  // parts of the current job that returned
  const std::function<void(int)>* work = nullptr;
  std::mutex error_mutex;
  std::exception_ptr error;
  std::atomic<uint32_t> wake_seq{0};  // the futex sleepers wait on
  std::atomic<int> sleepers{0};
  std::atomic<int> calls{0};  // calls between begin_call and end_call
  std::mutex run_mutex;       // one job at a time
  std::mutex grow_mutex;
  std::atomic<int> threads{0};
};

// Never destroyed (detached helpers use it until the process exits); a forked child, which has
// none of the parent's threads, starts from a fresh one.
std::atomic<State*> current{new State};
State& state() { return *current.load(std::memory_order_acquire); }

thread_local bool in_part = false;  // this thread runs a part (a nested run() runs inline)

bool has_work(const State& s) {
  const uint64_t c = s.claim.load(std::memory_order_seq_cst);
  return ((c >> 16) & 0xffff) < (c & 0xffff);
}

/// Claims and runs parts of the current job until none is left; true if it ran any.
bool claim_and_run(State& s) {
  bool ran = false;
  uint64_t c = s.claim.load(std::memory_order_acquire);
  while (((c >> 16) & 0xffff) < (c & 0xffff)) {
    if (!s.claim.compare_exchange_weak(c, c + (uint64_t{1} << 16), std::memory_order_acq_rel,
                                       std::memory_order_acquire))
      continue;
    in_part = true;
    try {
      (*s.work)(static_cast<int>((c >> 16) & 0xffff));
    } catch (...) {
      std::lock_guard lock(s.error_mutex);
      if (!s.error) s.error = std::current_exception();
    }
    in_part = false;
    s.done.fetch_add(1, std::memory_order_release);
    ran = true;
    c = s.claim.load(std::memory_order_acquire);
  }
  return ran;
}

void wake_sleepers(State& s) {
  if (s.sleepers.load(std::memory_order_seq_cst) == 0) return;
  s.wake_seq.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &s.wake_seq, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void helper_loop(State& s) {
  auto idle_since = Clock::now();
  for (;;) {
    if (claim_and_run(s)) idle_since = Clock::now();
    const auto idle = Clock::now() - idle_since;
    if (idle < kPoll) {
      comm::cpu_relax();
      continue;
    }
    const bool in_call = s.calls.load(std::memory_order_relaxed) > 0;
    if (idle < (in_call ? kCallIdle : kIdle)) {
      sched_yield();
      continue;
    }
    const uint32_t seq = s.wake_seq.load(std::memory_order_acquire);
    s.sleepers.fetch_add(1, std::memory_order_seq_cst);
    // Pairs with run()'s fence and begin_call's increment: either these looks see the job or a
    // call that began, or their wake_sleepers sees this sleeper. Left idle for kCallIdle inside
    // a call, it sleeps until the call's next job.
    if (!has_work(s) && (in_call || s.calls.load(std::memory_order_seq_cst) == 0)) {
      timespec timeout{1, 0};  // bounded, though no wake-up is lost
      syscall(SYS_futex, &s.wake_seq, FUTEX_WAIT_PRIVATE, seq, &timeout, nullptr, 0);
    }
    s.sleepers.fetch_sub(1, std::memory_order_relaxed);
    idle_since = Clock::now();
  }
}

}  // namespace

void ensure(int count) {
  static std::once_flag fork_handler;
  std::call_once(fork_handler, [] {
    pthread_atfork(nullptr, nullptr, [] { current.store(new State, std::memory_order_release); });
  });
  State& s = state();
  count = std::min(count, kMax);
  if (s.threads.load(std::memory_order_acquire) >= count) return;
  std::lock_guard lock(s.grow_mutex);
  for (int t = s.threads.load(); t < count; ++t) {
    std::thread(helper_loop, std::ref(s)).detach();
    s.threads.store(t + 1, std::memory_order_release);
  }
}

void begin_call() {
  State& s = state();
  s.calls.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers(s);
}

void end_call() { state().calls.fetch_sub(1, std::memory_order_relaxed); }

void run(int parts, const std::function<void(int part)>& work) {
  State& s = state();
  auto inline_parts = [&] {
    for (int part = 0; part < parts; ++part) work(part);
  };
  if (parts <= 1 || parts > 0xffff || in_part || s.threads.load(std::memory_order_acquire) == 0)
    return inline_parts();
  std::unique_lock lock(s.run_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return inline_parts();
  s.work = &work;
  s.error = nullptr;
  s.done.store(0, std::memory_order_relaxed);
  const uint64_t generation = (s.claim.load(std::memory_order_relaxed) >> 32) + 1;
  s.claim.store(generation << 32 | static_cast<uint64_t>(parts), std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with helper_loop's sleepers
  wake_sleepers(s);
  claim_and_run(s);
  // The last parts run on helpers; a preempted one may need this core.
  const auto waiting_since = Clock::now();
  while (s.done.load(std::memory_order_acquire) < parts) {
    if (Clock::now() - waiting_since < kPoll)
      comm::cpu_relax();
    else
      sched_yield();
  }
  if (s.error) std::rethrow_exception(s.error);
}

}  // namespace seam::collectives::helper_threads
