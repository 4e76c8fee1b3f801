// Task: a collective algorithm as a non-blocking schedule, written as a C++20 coroutine.
// An algorithm reads like Gloo's ("send to the right; wait for the left; reduce") yet never
// blocks a thread: each `co_await` on requests, a condition or a sub-task suspends it, and the
// driver (Work::wait/test, in the caller's thread) resumes it once what it waits for is ready.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "seam/errors.h"
#include "runtime/exec/task_frames.h"
#include "transports/transport.h"

namespace seam::comm {

/// Something a suspended task waits on; the driver polls ready().
class WaitPoint {
 public:
  virtual ~WaitPoint() = default;
  /// True when the task can continue (including when what it waits for failed).
  virtual bool ready() = 0;
  /// World rank the task is blocked on, for timeout messages (-1 if none or several).
  virtual int blocking_peer() const { return -1; }
  /// Whether ready() reads only memory that other processes write (shared-memory flags): the
  /// driver may then look again at once, without the transport's progress in between.
  virtual bool waits_on_memory() const { return false; }
};

class Task {
 public:
  struct promise_type {
    WaitPoint* waiting = nullptr;
    std::exception_ptr error;
    static void* operator new(std::size_t bytes) { return detail::allocate_frame(bytes); }
    static void operator delete(void* frame, std::size_t bytes) noexcept {
      detail::free_frame(frame, bytes);
    }
    Task get_return_object() { return Task(std::coroutine_handle<promise_type>::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { error = std::current_exception(); }
  };

  Task() = default;
  explicit Task(std::coroutine_handle<promise_type> h) : handle_(h) {}
  Task(Task&& o) noexcept : handle_(std::exchange(o.handle_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const { return static_cast<bool>(handle_); }
  bool done() const { return !handle_ || handle_.done(); }

  /// Runs the task as far as it can go without blocking. Returns true once it has finished;
  /// rethrows the task's exception if it failed.
  bool step() {
    if (!handle_) return true;
    auto& p = handle_.promise();
    while (!handle_.done()) {
      if (p.waiting && !p.waiting->ready()) return false;
      p.waiting = nullptr;
      ++resumptions_on_this_thread();
      handle_.resume();
    }
    if (p.error) std::rethrow_exception(p.error);
    return true;
  }

  /// How many times tasks were resumed on this thread: the driver counts a resumption as
  /// activity (the task may have copied, reduced and published without any transport moving).
  static uint64_t& resumptions_on_this_thread() {
    static thread_local uint64_t count = 0;
    return count;
  }

  /// Whether the task is suspended on a wait point that waits_on_memory().
  bool waits_on_memory() const {
    return handle_ && !handle_.done() && handle_.promise().waiting &&
           handle_.promise().waiting->waits_on_memory();
  }
  /// Whether what the suspended task waits for is there (step() would resume it).
  bool wait_over() const { return handle_.promise().waiting->ready(); }

  /// Peer the task is blocked on (-1 if none known).
  int blocking_peer() const {
    if (!handle_ || handle_.done() || !handle_.promise().waiting) return -1;
    return handle_.promise().waiting->blocking_peer();
  }

 private:
  void reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }
  std::coroutine_handle<promise_type> handle_;
};

namespace detail {

/// Base of Seam's awaiters: registers itself as the task's wait point on suspension.
template <class Derived>
struct AwaiterBase : WaitPoint {
  bool await_ready() { return static_cast<Derived*>(this)->ready(); }
  void await_suspend(std::coroutine_handle<Task::promise_type> h) { h.promise().waiting = this; }
};

/// Throws a CommError for the first failed request.
inline void throw_if_failed(const std::vector<transport::RequestPtr>& reqs) {
  for (const auto& r : reqs)
    if (r && r->failed()) throw CommError(r->error(), r->peer());
}

struct RequestsAwaiter : AwaiterBase<RequestsAwaiter> {
  std::vector<transport::RequestPtr> reqs;
  bool ready() override {
    for (const auto& r : reqs)
      if (r && !r->finished()) return false;
    return true;
  }
  int blocking_peer() const override {
    for (const auto& r : reqs)
      if (r && !r->finished()) return r->peer();
    return -1;
  }
  void await_resume() { throw_if_failed(reqs); }
};

struct ConditionAwaiter : AwaiterBase<ConditionAwaiter> {
  std::function<bool()> condition;
  int peer = -1;
  bool ready() override { return condition(); }
  int blocking_peer() const override { return peer; }
  void await_resume() {}
};

struct SubTaskAwaiter : AwaiterBase<SubTaskAwaiter> {
  Task* sub;
  std::exception_ptr error;
  // A failed sub-task is ready: await_resume rethrows its error inside the awaiting coroutine
  // (which may catch it), not in the driver that polls ready().
  bool ready() override {
    try {
      return sub->step();
    } catch (...) {
      error = std::current_exception();
      return true;
    }
  }
  int blocking_peer() const override { return sub->blocking_peer(); }
  bool waits_on_memory() const override { return sub->waits_on_memory(); }
  void await_resume() {
    if (error) std::rethrow_exception(error);
  }
};

/// Steps two sub-tasks side by side; a failure of either resumes the awaiting coroutine, which
/// rethrows it (the other is then abandoned, as any sub-task of a failed call is).
struct TogetherAwaiter : AwaiterBase<TogetherAwaiter> {
  Task* first;
  Task* second;
  std::exception_ptr error;
  bool ready() override {
    try {
      const bool a = first->step();
      const bool b = second->step();
      return a && b;
    } catch (...) {
      error = std::current_exception();
      return true;
    }
  }
  int blocking_peer() const override {
    const int p = first->blocking_peer();
    return p >= 0 ? p : second->blocking_peer();
  }
  void await_resume() {
    if (error) std::rethrow_exception(error);
  }
};

}  // namespace detail

/// `co_await all_of(std::move(requests))`: resumes when every request finished; throws CommError
/// if one failed. (GCC 12 rejects a braced list directly inside `co_await`: build the vector first.)
inline detail::RequestsAwaiter all_of(std::vector<transport::RequestPtr> reqs) {
  detail::RequestsAwaiter a;
  a.reqs = std::move(reqs);
  return a;
}

/// `co_await until([&]{ return flag_set(); }, peer)`: resumes when the condition holds
/// (used by shared-memory algorithms that wait on flags rather than messages).
inline detail::ConditionAwaiter until(std::function<bool()> condition, int peer = -1) {
  detail::ConditionAwaiter a;
  a.condition = std::move(condition);
  a.peer = peer;
  return a;
}

/// `co_await run(sub)`: runs a sub-schedule (e.g. reduce-scatter inside all-reduce) to completion.
inline detail::SubTaskAwaiter run(Task& sub) {
  detail::SubTaskAwaiter a;
  a.sub = &sub;
  return a;
}

/// `co_await together(a, b)`: runs two sub-schedules at once (e.g. a shared-memory phase feeding a
/// network phase) until both finished.
inline detail::TogetherAwaiter together(Task& first, Task& second) {
  detail::TogetherAwaiter a;
  a.first = &first;
  a.second = &second;
  return a;
}

}  // namespace seam::comm
