#include "runtime/device/device_state.h"

#include <sys/mman.h>

#include "kernels/cuda/peer_sync.h"
#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/comm/host_link.h"

namespace seam::device {

using kernels::cuda::AbortKind;

DeviceState::DeviceState(std::shared_ptr<comm::Communicator> host, void* abort_page, size_t page_bytes,
                         int64_t timeout_ms)
    : host_(std::move(host)), abort_page_(abort_page), page_bytes_(page_bytes), timeout_ms_(timeout_ms) {
  if (cudaHostRegister(abort_page_, page_bytes_, cudaHostRegisterMapped | cudaHostRegisterPortable) != cudaSuccess ||
      cudaHostGetDevicePointer(reinterpret_cast<void**>(const_cast<uint32_t**>(&abort_device_)), abort_page_, 0) !=
          cudaSuccess) {
    cudaGetLastError();
    munmap(abort_page_, page_bytes_);
    throw CommError("seam: device communicator: cannot map the abort page for the GPU");
  }
}

DeviceState::~DeviceState() {
  for (cudaEvent_t e : all_events_) cudaEventDestroy(e);
  cudaHostUnregister(abort_page_);
  munmap(abort_page_, page_bytes_);
}

void DeviceState::abort(uint32_t code, const std::string& reason) { set_abort(code, reason, nullptr); }

void DeviceState::abort(uint32_t code, std::exception_ptr cause) {
  std::string what = "an unknown failure";
  try {
    std::rethrow_exception(cause);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  set_abort(code, what, cause);
}

void DeviceState::set_abort(uint32_t code, const std::string& reason, std::exception_ptr cause) {
  std::lock_guard lock(mutex_);
  if (*abort_word() != 0) return;
  local_reason_ = reason;
  cause_ = std::move(cause);
  __atomic_store_n(const_cast<uint32_t*>(abort_word()), code, __ATOMIC_SEQ_CST);
  log().debug("seam: device communicator aborted (code {:#x}): {}", code, reason);
}

std::exception_ptr DeviceState::failure() const {
  const uint32_t code = *abort_word();
  if (code == 0) return nullptr;
  {
    std::lock_guard lock(mutex_);
    if (cause_) return cause_;
  }
  const int reporter = kernels::cuda::abort_reporter(code), subject = kernels::cuda::abort_subject(code);
  const int world_subject = subject >= 0 && subject < host_->size() ? host_->world_rank(subject) : -1;
  std::string local;
  {
    std::lock_guard lock(mutex_);
    local = local_reason_;
  }
  const std::string who = "rank " + std::to_string(subject);
  const std::string by = " (seen by rank " + std::to_string(reporter) + ")";
  switch (kernels::cuda::abort_kind(code)) {
    case AbortKind::kAbortTimeout:
      if (subject < 0)
        return std::make_exception_ptr(TimeoutError("seam: device collective timed out after " +
                                                    std::to_string(timeout_ms_) + " ms (SEAM_TIMEOUT_MS) + 2 s: " + local));
      return std::make_exception_ptr(TimeoutError(
          "seam: device collective timed out after " + std::to_string(timeout_ms_) + " ms (SEAM_TIMEOUT_MS): rank " +
              std::to_string(reporter) + " waited on the GPU for " + who +
              " (it is slow, stuck, or called another collective)",
          world_subject));
    case AbortKind::kAbortPeerDied:
      return std::make_exception_ptr(
          CommError("seam: device communicator: lost " + who + ": its process died" + by, world_subject));
    case AbortKind::kAbortMismatch:
      return std::make_exception_ptr(MismatchError(
          "seam: device communicator: rank " + std::to_string(reporter) + " and " + who +
              " called different collectives (kind, dtype, op, root or counts differ)",
          true));
    default:
      return std::make_exception_ptr(CommError(
          "seam: device communicator aborted by rank " + std::to_string(reporter) + (local.empty() ? "" : ": " + local),
          world_subject));
  }
}

std::string DeviceState::failure_text() const {
  try {
    std::rethrow_exception(failure());
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "seam: device communicator aborted";
}

void DeviceState::abort_host() {
  if (comm::host_link::aborted(*host_)) return;
  try {
    std::rethrow_exception(failure());
  } catch (const CommError& e) {
    comm::host_link::abort(*host_, e.what(), e.peer());
  } catch (const std::exception& e) {
    comm::host_link::abort(*host_, e.what(), -1);
  }
}

cudaEvent_t DeviceState::take_event() {
  std::lock_guard lock(mutex_);
  if (!free_events_.empty()) {
    cudaEvent_t e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    throw CommError("seam: device communicator: cannot create a CUDA event");
  }
  all_events_.push_back(e);
  return e;
}

void DeviceState::give_event(cudaEvent_t e) {
  std::lock_guard lock(mutex_);
  free_events_.push_back(e);
}

}  // namespace seam::device
