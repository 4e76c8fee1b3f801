#include "runtime/capi/status.h"

#include <exception>
#include <new>
#include <string>

#include "seam/errors.h"
#include "layouts/log.h"

namespace seam::capi {

namespace {

// Per thread, as errno: a failure on one thread must not overwrite another's message.
thread_local std::string last_error;

seam_status_t code_of_current() noexcept {
  try {
    throw;
  } catch (const TimeoutError&) {  // before CommError, its base
    return SEAM_ERR_TIMEOUT;
  } catch (const CommError&) {
    return SEAM_ERR_COMM;
  } catch (const MismatchError&) {
    return SEAM_ERR_MISMATCH;
  } catch (const ValueError&) {
    return SEAM_ERR_VALUE;
  } catch (const TypeError&) {
    return SEAM_ERR_TYPE;
  } catch (const UsageError&) {
    return SEAM_ERR_USAGE;
  } catch (const NotSupportedError&) {
    return SEAM_ERR_NOT_SUPPORTED;
  } catch (...) {
    return SEAM_ERR_OTHER;
  }
}

std::string message_of_current(const char* function) {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return std::string(function) + ": an unknown exception";
  }
}

}  // namespace

seam_status_t fail_current(const char* function) noexcept {
  const seam_status_t code = code_of_current();
  try {
    last_error = message_of_current(function);
    SEAM_LOG_DEBUG("{} failed ({}): {}", function, seam_status_name(code), last_error);
  } catch (...) {
    // No memory for the message: the code alone still says what failed.
    last_error.clear();
  }
  return code;
}

}  // namespace seam::capi

extern "C" {

const char* seam_last_error(void) { return seam::capi::last_error.c_str(); }

const char* seam_status_name(seam_status_t status) {
  switch (status) {
    case SEAM_OK: return "SEAM_OK";
    case SEAM_ERR_VALUE: return "SEAM_ERR_VALUE";
    case SEAM_ERR_TYPE: return "SEAM_ERR_TYPE";
    case SEAM_ERR_MISMATCH: return "SEAM_ERR_MISMATCH";
    case SEAM_ERR_TIMEOUT: return "SEAM_ERR_TIMEOUT";
    case SEAM_ERR_COMM: return "SEAM_ERR_COMM";
    case SEAM_ERR_USAGE: return "SEAM_ERR_USAGE";
    case SEAM_ERR_NOT_SUPPORTED: return "SEAM_ERR_NOT_SUPPORTED";
    case SEAM_ERR_OTHER: return "SEAM_ERR_OTHER";
  }
  return "SEAM_ERR_UNKNOWN";
}

}  // extern "C"
