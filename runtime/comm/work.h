// Work: the handle of a non-blocking operation. wait() drives it in the caller's thread (spin
// briefly, then sleep on the transport's event), bounded by the operation's deadline.
#pragma once

#include <memory>
#include <string>

namespace seam::comm {

class WorkState;  // runtime-internal

class Work {
 public:
  Work() = default;  ///< an already-complete no-op
  explicit Work(std::shared_ptr<WorkState> state) : state_(std::move(state)) {}

  /// Blocks until the operation completes. Throws CommError (peer lost, remote error),
  /// TimeoutError (deadline, naming the peer waited on) or MismatchError.
  void wait();
  /// Advances the operation without blocking; true once complete. Throws as wait() does.
  bool test();
  /// Complete (successfully or not)?
  bool finished() const;
  /// The failure message, empty while pending or on success.
  std::string error() const;

 private:
  std::shared_ptr<WorkState> state_;
};

}  // namespace seam::comm
