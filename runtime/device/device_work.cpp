#include "runtime/device/device_work.h"

#include <thread>

#include "kernels/cuda/peer_sync.h"
#include "seam/errors.h"

namespace seam::device {

using Clock = std::chrono::steady_clock;

// The GPU enforces SEAM_TIMEOUT_MS on every wait itself; the host gives it this much longer to
// say so before it aborts on its own (the call may have queued behind other work).
constexpr auto kHostGrace = std::chrono::seconds(2);

DeviceWork::DeviceWork(std::shared_ptr<DeviceState> state, const char* op, cudaEvent_t event, int rank, bool staged)
    : state_(std::move(state)), op_(op), event_(event), rank_(rank),
      deadline_(Clock::now() + std::chrono::milliseconds(state_->timeout_ms()) + kHostGrace), staged_(staged),
      progress_seen_(state_->progress()) {}

DeviceWork::~DeviceWork() { state_->give_event(event_); }

void DeviceWork::fail(std::exception_ptr e) {
  error_ = e;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    error_text_ = x.what();
  }
  status_ = Status::failed;
  state_->abort_host();
}

void DeviceWork::look() {
  if (status_ != Status::pending) return;
  const cudaError_t q = cudaEventQuery(event_);
  if (q == cudaSuccess) {
    // A kernel that gave up also reaches the event: its gave-up word tells them apart (a peer
    // may exit, and abort the communicator, just after a call completed everywhere).
    if (state_->gave_up(rank_) || (staged_ && state_->aborted())) return fail(state_->failure());
    status_ = Status::done;
    return;
  }
  if (q != cudaErrorNotReady) {
    cudaGetLastError();
    state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, rank_, -1),
                  std::string("CUDA error on the stream: ") + cudaGetErrorString(q));
    return fail(state_->failure());
  }
  if (staged_ && state_->progress() != progress_seen_) {
    // Calls queued ahead on a slow network: the deadline is on progress, not on the whole queue.
    progress_seen_ = state_->progress();
    deadline_ = Clock::now() + std::chrono::milliseconds(state_->timeout_ms()) + kHostGrace;
  }
  if (Clock::now() > deadline_) {
    state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortTimeout, rank_, -1),
                  std::string(op_) + " did not finish on its stream in time");
    return fail(state_->failure());
  }
}

bool DeviceWork::in_flight() {
  return status_ == Status::pending && cudaEventQuery(event_) == cudaErrorNotReady;
}

bool DeviceWork::test() {
  look();
  if (status_ == Status::failed) std::rethrow_exception(error_);
  return status_ == Status::done;
}

void DeviceWork::wait() {
  // Spin briefly (decode-size calls end in microseconds), then sleep in short slices.
  const auto spin_until = Clock::now() + std::chrono::microseconds(50);
  while (status_ == Status::pending) {
    look();
    if (status_ != Status::pending) break;
    if (Clock::now() < spin_until)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  if (status_ == Status::failed) std::rethrow_exception(error_);
}

}  // namespace seam::device
