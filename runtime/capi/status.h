// How the C API reports failures: every entry point runs its body through guarded(), which turns
// any C++ exception into a seam_status_t and this thread's last-error message, so none crosses
// into the caller's C (or Rust, Go, ...) frames.
#pragma once

#include <utility>

#include "seam/seam.h"

namespace seam::capi {

/// Maps the exception in flight (call only inside a catch block) to its status code, records its
/// message as this thread's last error and logs it at debug. Never throws.
seam_status_t fail_current(const char* function) noexcept;

/// Runs body(); SEAM_OK when it returns, the exception's code when it throws.
template <class Body>
seam_status_t guarded(const char* function, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
    return SEAM_OK;
  } catch (...) {
    return fail_current(function);
  }
}

}  // namespace seam::capi
