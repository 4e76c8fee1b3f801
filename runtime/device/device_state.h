// The part of a device communicator that its Works share and may outlive it by: the abort word
// (host-mapped, shared by every rank of the communicator), the failure it encodes, and the pool
// of CUDA events that mark where each eager call ends on its stream.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cuda/peer_sync.h"
#include "seam/communicator.h"

namespace seam::device {

class DeviceState {
 public:
  /// `abort_page`: this process's mapping of the shared page (munmapped with the state).
  DeviceState(std::shared_ptr<comm::Communicator> host, void* abort_page, size_t page_bytes, int64_t timeout_ms);
  ~DeviceState();

  /// The abort word, as the host sees it (0 while healthy; kernels/cuda/peer_sync.h's code).
  volatile uint32_t* abort_word() const { return static_cast<volatile uint32_t*>(abort_page_); }
  /// The same word as the GPU sees it.
  volatile uint32_t* abort_word_device() const { return abort_device_; }
  bool aborted() const { return *abort_word() != 0; }
  /// Whether a kernel of `rank` gave up waiting (its outputs are incomplete).
  bool gave_up(int rank) const {
    return static_cast<volatile kernels::cuda::AbortPage*>(abort_page_)->gave_up[rank] != 0;
  }
  /// The GPU's pointer to rank's gave-up word.
  volatile uint32_t* gave_up_device(int rank) const {
    return reinterpret_cast<volatile uint32_t*>(reinterpret_cast<volatile char*>(abort_device_) +
                                                offsetof(kernels::cuda::AbortPage, gave_up) + 4 * rank);
  }
  /// Sets the abort word if it is still 0 (the first failure wins), remembering `reason`.
  void abort(uint32_t code, const std::string& reason = {});
  /// The same, for a failure the host collectives raised: failure() rethrows `cause` itself.
  void abort(uint32_t code, std::exception_ptr cause);
  /// The exception the abort word stands for (CommError, TimeoutError or MismatchError).
  std::exception_ptr failure() const;
  /// failure()'s message (after an abort).
  std::string failure_text() const;
  /// Aborts the host communicator's engine with the same failure (the caller's thread drives it).
  void abort_host();

  /// An event to record after an eager call, and its return.
  cudaEvent_t take_event();
  void give_event(cudaEvent_t e);

  /// Chunks the staged path's progress thread finished (any call): a staged Work's host deadline
  /// counts from the last one, as its wait kernels' does.
  uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }
  void advance() { progress_.fetch_add(1, std::memory_order_relaxed); }

  comm::Communicator& host() const { return *host_; }
  int64_t timeout_ms() const { return timeout_ms_; }

 private:
  /// Both aborts: the abort word, the reason and (from the host collectives) the exception.
  void set_abort(uint32_t code, const std::string& reason, std::exception_ptr cause);
  std::shared_ptr<comm::Communicator> host_;
  void* abort_page_;
  size_t page_bytes_;
  volatile uint32_t* abort_device_ = nullptr;
  int64_t timeout_ms_;
  mutable std::mutex mutex_;
  std::string local_reason_;
  std::exception_ptr cause_;
  std::atomic<uint64_t> progress_{0};
  std::vector<cudaEvent_t> free_events_;
  std::vector<cudaEvent_t> all_events_;
};

}  // namespace seam::device
