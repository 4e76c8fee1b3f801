// Work: the handle of a non-blocking operation. wait() drives it in the caller's thread (spin
// briefly, then sleep on the transport's event), bounded by the operation's deadline.
#pragma once

#include <memory>
#include <string>

namespace seam::comm {

class WorkState;  // runtime-internal

/// An operation completed by something other than the host engine (a device call: the stream
/// reaching it). Implemented by the device runtime.
class Completion {
 public:
  virtual ~Completion() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;
  virtual bool finished() const = 0;
  virtual std::string error() const = 0;
};

class Work {
 public:
  Work() = default;  ///< an already-complete no-op
  explicit Work(std::shared_ptr<WorkState> state) : state_(std::move(state)) {}
  explicit Work(std::shared_ptr<Completion> completion) : completion_(std::move(completion)) {}

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
  std::shared_ptr<Completion> completion_;
};

}  // namespace seam::comm
