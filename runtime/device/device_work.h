// The Work of an eager device call: complete when its stream passes the event recorded after the
// call's kernels; failed when the communicator's abort word says so, or when the call's deadline
// passes first (then it aborts the communicator, so that its kernels give up).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <string>

#include "seam/work.h"
#include "runtime/device/device_state.h"

namespace seam::device {

class DeviceWork final : public comm::Completion {
 public:
  /// staged: its deadline counts from the staged path's last progress, and it fails when the
  /// communicator aborted before it completed (a two-level call's host level may have read a
  /// peer's share that its network level never delivered).
  DeviceWork(std::shared_ptr<DeviceState> state, const char* op, cudaEvent_t event, int rank, bool staged = false);
  ~DeviceWork() override;
  void wait() override;
  bool test() override;
  bool finished() const override { return status_ != Status::pending; }
  std::string error() const override { return error_text_; }
  /// Whether the stream has not yet passed the call (for the one-stream rule).
  bool in_flight();

 private:
  enum class Status : uint8_t { pending, done, failed };
  /// One look: the event, the abort word, the deadline.
  void look();
  void fail(std::exception_ptr e);

  std::shared_ptr<DeviceState> state_;
  const char* op_;
  cudaEvent_t event_;
  int rank_;
  std::chrono::steady_clock::time_point deadline_;
  bool staged_;
  uint64_t progress_seen_ = 0;
  Status status_ = Status::pending;
  std::exception_ptr error_;
  std::string error_text_;
};

}  // namespace seam::device
