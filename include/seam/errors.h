// Seam's exception types. They live in layouts/ (the lowest layer) so every layer can raise them.
// Categories follow the user guide: misuse (RuntimeError), unsupported (NotImplementedError),
// bad declaration/argument (ValueError/TypeError), communication failure and timeout.
#pragma once

#include <stdexcept>
#include <string>

namespace seam {

/// Base of every error Seam raises.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Misuse of the residual stream or a boundary at run time (the guide's RuntimeError).
class UsageError : public Error {
 public:
  using Error::Error;
};

/// A configuration or transition Seam does not support (the guide's NotImplementedError).
class NotSupportedError : public Error {
 public:
  using Error::Error;
};

/// A bad declaration, option or argument (the guide's ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};

/// An argument of the wrong kind (the guide's TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};

/// Arguments that disagree across ranks (count, dtype, op, root). aborts(): the call left
/// messages or waits behind on other ranks, so it aborted the communicator (unusable after it,
/// as after a CommError; the other ranks fail at once with its notice).
class MismatchError : public Error {
 public:
  explicit MismatchError(const std::string& what, bool aborts = false) : Error(what), aborts_(aborts) {}
  bool aborts() const { return aborts_; }

 private:
  bool aborts_;
};

/// A peer died, a connection broke, or a remote operation failed. peer() is the world rank
/// involved, or -1 when unknown.
class CommError : public Error {
 public:
  CommError(const std::string& what, int peer = -1) : Error(what), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

/// A wait passed its deadline (SEAM_TIMEOUT_MS). A CommError: the peer did not answer in time.
class TimeoutError : public CommError {
 public:
  using CommError::CommError;
};

}  // namespace seam
