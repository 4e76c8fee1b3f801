// Stream-ordered device calls through pinned host memory, for communicators whose GPUs cannot map
// each other's memory (ranks on several hosts). A call is cut into chunks: each is copied into a
// pinned slot on a side stream, its host collective runs on a progress thread over a duplicate of
// the host communicator, and a one-thread kernel holds the caller's stream until then, before the
// copy back. The caller never waits on the host, and one chunk's copy to the host, the next one's
// network and the previous one's copy back overlap.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/device/device_state.h"
#include "seam/communicator.h"

namespace seam::device {

/// How many chunks a staged call moving `bytes` through each slot takes, with chunks of at most
/// `chunk_bytes` (SEAM_CUDA_STAGED_CHUNK_KB): about 8, none below 256 KiB unless the call is.
size_t staged_chunks(size_t bytes, size_t chunk_bytes);

class StagedPipeline {
 public:
  /// A contiguous copy between device memory and the chunk's slot.
  struct Copy {
    void* device;
    size_t slot_offset;
    size_t bytes;
  };
  /// One chunk's host collective, on the duplicate communicator, in the chunk's slot.
  using HostStep = std::function<void(comm::Communicator&, char* slot)>;

  /// Duplicates `host` (a collective call: every rank constructs its pipeline together).
  /// chunk_bytes: the largest chunk, the same on every rank (checked here).
  StagedPipeline(comm::Communicator& host, std::shared_ptr<DeviceState> state, int rank, size_t chunk_bytes);
  ~StagedPipeline();
  StagedPipeline(const StagedPipeline&) = delete;
  StagedPipeline& operator=(const StagedPipeline&) = delete;

  /// How many chunks a call moving `bytes` through each slot takes (the same on every rank).
  size_t chunks_for(size_t bytes) const;
  /// Starts a call on `stream`: its copies to the host follow the stream's earlier work.
  void begin_call(cudaStream_t stream);
  /// Queues one chunk of the call: `in` into the slot, `step` on it, then `out` back, on `stream`.
  /// The copies' slot ranges stay within slot_bytes().
  void chunk(const std::vector<Copy>& in, HostStep step, const std::vector<Copy>& out, cudaStream_t stream);
  /// Ends a call: `stream` goes on only after the side stream's copies of it (which, after an
  /// abort, may outlast the waits that gave up).
  void end_call(cudaStream_t stream);
  /// A slot's size: the largest chunk plus room for per-rank alignment.
  size_t slot_bytes() const { return slot_bytes_; }

 private:
  struct Job {
    uint64_t seq;
    HostStep step;
    char* slot;
    std::chrono::steady_clock::time_point queued;
  };
  static void CUDART_CB copied(void* self);
  void run();
  /// On the progress thread: aborts the duplicate's engine once the communicator aborted, which
  /// tells the other ranks' progress threads at once.
  void abort_duplicate();
  bool duplicate_aborted_ = false;
  void check(cudaError_t err, const char* what);
  void release();  // the CUDA resources

  std::shared_ptr<DeviceState> state_;
  std::shared_ptr<comm::Communicator> dup_;
  int rank_;
  size_t chunk_bytes_;
  size_t slot_bytes_;
  static constexpr int kSlots = 4;
  char* slots_ = nullptr;  // kSlots pinned slots
  cudaEvent_t slot_free_[kSlots] = {};
  bool slot_used_[kSlots] = {};
  cudaEvent_t fork_ = nullptr;
  cudaEvent_t join_ = nullptr;
  cudaStream_t side_ = nullptr;
  uint64_t* done_ = nullptr;  // host-mapped: chunks whose host collective finished
  uint64_t* done_device_ = nullptr;
  uint64_t next_seq_ = 0;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  uint64_t copied_ = 0;  // chunks whose copy to the host finished (side stream order)
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace seam::device
