#include "runtime/device/staged_pipeline.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "kernels/cuda/host_wait.h"
#include "kernels/cuda/peer_sync.h"
#include "layouts/log.h"
#include "runtime/comm/host_link.h"
#include "seam/errors.h"

namespace seam::device {
namespace {

/// Room in a slot beyond the largest chunk: per-rank pieces start 64-byte aligned.
constexpr size_t kSlack = 4096;
/// Chunks below this cost more per call than their overlap saves.
constexpr size_t kMinChunk = size_t{256} << 10;
/// A call is cut into about this many chunks (fewer when that would go below kMinChunk).
constexpr size_t kChunksPerCall = 8;

}  // namespace

StagedPipeline::StagedPipeline(comm::Communicator& host, std::shared_ptr<DeviceState> state, int rank,
                               size_t chunk_bytes)
    : state_(std::move(state)), rank_(rank), chunk_bytes_(chunk_bytes), slot_bytes_(chunk_bytes + kSlack) {
  // The chunking decides which host collectives run: every rank must cut calls alike.
  const int mine[2] = {static_cast<int>(chunk_bytes >> 10), -static_cast<int>(chunk_bytes >> 10)};
  int most[2] = {0, 0};
  host.all_reduce(mine, most, 2, DType::i32, ReduceOp::max).wait();
  if (most[0] != mine[0] || -most[1] != mine[0])
    throw ValueError("seam: device communicator: the ranks disagree on SEAM_CUDA_STAGED_CHUNK_KB");
  dup_ = host.duplicate();
  // A failure seen elsewhere (a kernel's give-up, a local peer's death, the caller) also ends the
  // host collective the progress thread waits in, rather than its deadline.
  comm::host_link::set_abort_probe(*dup_, [s = state_]() -> std::string {
    return s->aborted() ? s->failure_text() : std::string();
  });
  auto fail = [&](cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    cudaGetLastError();
    release();
    throw CommError(std::string("seam: device staged path: ") + what + ": " + cudaGetErrorString(e));
  };
  fail(cudaHostAlloc(reinterpret_cast<void**>(&slots_), slot_bytes_ * kSlots, cudaHostAllocDefault),
       "cudaHostAlloc (staging slots)");
  fail(cudaHostAlloc(reinterpret_cast<void**>(&done_), 64, cudaHostAllocMapped), "cudaHostAlloc (progress counter)");
  *done_ = 0;
  fail(cudaHostGetDevicePointer(reinterpret_cast<void**>(&done_device_), done_, 0), "cudaHostGetDevicePointer");
  fail(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), "cudaStreamCreate");
  fail(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming), "cudaEventCreate");
  fail(cudaEventCreateWithFlags(&join_, cudaEventDisableTiming), "cudaEventCreate");
  for (cudaEvent_t& e : slot_free_) fail(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  thread_ = std::thread([this] { run(); });
}

StagedPipeline::~StagedPipeline() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (side_) cudaStreamSynchronize(side_);
  // The transport goes before the slots: after an abort its posted receives may still target them.
  dup_.reset();
  release();
}

void StagedPipeline::release() {
  if (side_) cudaStreamSynchronize(side_);
  for (cudaEvent_t& e : slot_free_)
    if (e) cudaEventDestroy(e), e = nullptr;
  if (fork_) cudaEventDestroy(fork_), fork_ = nullptr;
  if (join_) cudaEventDestroy(join_), join_ = nullptr;
  if (side_) cudaStreamDestroy(side_), side_ = nullptr;
  if (done_) cudaFreeHost(done_), done_ = nullptr;
  if (slots_) cudaFreeHost(slots_), slots_ = nullptr;
  cudaGetLastError();
}

size_t staged_chunks(size_t bytes, size_t chunk_bytes) {
  const size_t target = std::clamp((bytes + kChunksPerCall - 1) / kChunksPerCall, std::min(kMinChunk, chunk_bytes),
                                   chunk_bytes);
  return std::max<size_t>(1, (bytes + target - 1) / target);
}

size_t StagedPipeline::chunks_for(size_t bytes) const { return staged_chunks(bytes, chunk_bytes_); }

void StagedPipeline::check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();
  const std::string why = std::string("staged path: ") + what + ": " + cudaGetErrorString(err);
  state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, rank_, -1), why);
  throw CommError("seam: device " + why);
}

void StagedPipeline::begin_call(cudaStream_t stream) {
  check(cudaEventRecord(fork_, stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(side_, fork_, 0), "cudaStreamWaitEvent");
}

void StagedPipeline::end_call(cudaStream_t stream) {
  check(cudaEventRecord(join_, side_), "cudaEventRecord");
  check(cudaStreamWaitEvent(stream, join_, 0), "cudaStreamWaitEvent");
}

void CUDART_CB StagedPipeline::copied(void* self) {
  auto* p = static_cast<StagedPipeline*>(self);
  {
    std::lock_guard lock(p->mutex_);
    ++p->copied_;
  }
  p->cv_.notify_all();
}

void StagedPipeline::chunk(const std::vector<Copy>& in, HostStep step, const std::vector<Copy>& out,
                           cudaStream_t stream) {
  const uint64_t seq = next_seq_++;
  const size_t s = seq % kSlots;
  char* slot = slots_ + s * slot_bytes_;
  // The slot is free once the stream copied the previous chunk in it back to the device.
  if (slot_used_[s]) check(cudaStreamWaitEvent(side_, slot_free_[s], 0), "cudaStreamWaitEvent");
  for (const Copy& c : in)
    if (c.bytes) check(cudaMemcpyAsync(slot + c.slot_offset, c.device, c.bytes, cudaMemcpyDeviceToHost, side_), "copy to host");
  check(cudaLaunchHostFunc(side_, &StagedPipeline::copied, this), "cudaLaunchHostFunc");
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{seq, std::move(step), slot, std::chrono::steady_clock::now()});
  }
  cv_.notify_all();
  kernels::cuda::HostWait w{};
  w.counter = done_device_;
  w.target = seq + 1;
  w.abort_word = state_->abort_word_device();
  w.gave_up = state_->gave_up_device(rank_);
  w.timeout_ns = static_cast<uint64_t>(state_->timeout_ms()) * 1000000ull;
  w.rank = rank_;
  check(kernels::cuda::launch_host_wait(w, stream), "the wait for the host collective");
  for (const Copy& c : out)
    if (c.bytes) check(cudaMemcpyAsync(c.device, slot + c.slot_offset, c.bytes, cudaMemcpyHostToDevice, stream), "copy to the device");
  check(cudaEventRecord(slot_free_[s], stream), "cudaEventRecord");
  slot_used_[s] = true;
}

void StagedPipeline::abort_duplicate() {
  if (duplicate_aborted_ || !state_->aborted()) return;
  duplicate_aborted_ = true;
  if (!comm::host_link::aborted(*dup_)) comm::host_link::abort(*dup_, state_->failure_text(), -1);
}

void StagedPipeline::run() {
  using Clock = std::chrono::steady_clock;
  constexpr auto kLook = std::chrono::milliseconds(20);
  for (;;) {
    Job job;
    Clock::time_point popped, copied;
    {
      std::unique_lock lock(mutex_);
      // Idle, it still looks at the abort word: the other ranks hear of an abort at once.
      while (!stop_ && jobs_.empty()) {
        cv_.wait_for(lock, kLook);
        if (!state_->aborted() && jobs_.empty()) {
          // An idle engine reads its peers' abort notices only when driven; this thread is its
          // only driver.
          lock.unlock();
          comm::host_link::poll(*dup_);
          lock.lock();
        }
        if (state_->aborted() && !duplicate_aborted_) {
          lock.unlock();
          abort_duplicate();
          lock.lock();
        } else if (!state_->aborted() && comm::host_link::aborted(*dup_)) {
          // A peer's failure that reached this rank between calls (say a recv that refused its
          // send): later calls fail at once, and check() says so.
          lock.unlock();
          state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, rank_, -1),
                        "the staged path's communicator aborted: " + comm::host_link::abort_reason(*dup_));
          lock.lock();
        }
      }
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      popped = Clock::now();
      // Its copy to the host: the side stream may first wait for the caller's earlier work.
      const auto deadline = Clock::now() + std::chrono::milliseconds(state_->timeout_ms());
      while (copied_ <= job.seq && !state_->aborted()) {
        cv_.wait_until(lock, std::min(deadline, Clock::now() + kLook));
        if (copied_ <= job.seq && Clock::now() >= deadline) {
          state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortTimeout, rank_, -1),
                        "a chunk's copy to host memory did not finish in time (the stream is stuck before the call)");
          break;
        }
      }
    }
    // After an abort the chunk's wait kernel gives up on the abort word: the counter stays.
    if (state_->aborted()) {
      abort_duplicate();
      continue;
    }
    copied = Clock::now();
    try {
      job.step(*dup_, job.slot);
    } catch (...) {
      state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, rank_, -1), std::current_exception());
      SEAM_LOG_DEBUG("seam: device staged path: a chunk's host collective failed; the communicator aborts");
      continue;
    }
    __atomic_store_n(done_, job.seq + 1, __ATOMIC_RELEASE);
    state_->advance();
    if (log().should_log(spdlog::level::trace)) {
      auto us = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
      log().trace("seam: device staged chunk {}: queued {} us before the thread took it, copied to host {} us later, "
                  "host collective {} us",
                  job.seq, us(popped - job.queued), us(copied - popped), us(Clock::now() - copied));
    }
  }
}

}  // namespace seam::device
