// Device side of PeerSync: a barrier between block b of this rank and block b of every peer,
// with every wait bounded by the abort word and a deadline on the GPU's global timer.
#pragma once

#include <cstdint>

#include "kernels/cuda/peer_sync.h"

namespace seam::kernels::cuda::device {

// System-scope release/acquire on the flags: the peers are other processes, possibly other GPUs.
__device__ __forceinline__ void store_release(uint32_t* flag, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ uint32_t load_acquire(const uint32_t* flag) {
  uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

/// Waits until *flag reaches `epoch` (a peer may already be one barrier further). False when the
/// communicator aborted or the deadline passed (then this wait sets the abort word itself).
__device__ __forceinline__ bool wait_flag(const PeerSync& s, const uint32_t* flag, uint32_t epoch, int peer) {
  if (static_cast<int32_t>(load_acquire(flag) - epoch) >= 0) return true;
  const uint64_t start = global_ns();
  for (uint32_t spins = 1;; ++spins) {
    if (static_cast<int32_t>(load_acquire(flag) - epoch) >= 0) return true;
    if ((spins & 63) == 0) {
      if (*s.abort_word != 0) break;
      if (global_ns() - start > s.timeout_ns) {
        if (*s.abort_word == 0) *s.abort_word = abort_code(kAbortTimeout, s.rank, peer);
        break;
      }
    }
  }
  *s.gave_up = 1;
  __threadfence_system();
  return false;
}

/// Block b of this rank meets block b of every rank: thread t announces this rank's arrival to
/// rank t, then waits for rank t's. Everything the block wrote before is visible to the peers'
/// block b after it; false (in every thread) when the communicator aborted instead.
/// `check_signature`: block 0's first barrier of a call also compares the call with every peer's.
__device__ __forceinline__ bool barrier(const PeerSync& s, bool check_signature = false) {
  __shared__ int gave_up;
  if (threadIdx.x == 0) gave_up = 0;
  __syncthreads();
  const uint32_t epoch = s.epochs[blockIdx.x] + 1;
  if (threadIdx.x < s.size) {
    const int t = threadIdx.x;
    PeerFlags* peer = s.flags[t];
    PeerFlags* self = s.flags[s.rank];
    if (check_signature) peer->signature[s.rank] = s.signature;
    store_release(&peer->flags[blockIdx.x][s.rank], epoch);
    if (!wait_flag(s, &self->flags[blockIdx.x][t], epoch, t)) {
      gave_up = 1;
    } else if (check_signature && *reinterpret_cast<volatile uint64_t*>(&self->signature[t]) != s.signature) {
      if (*s.abort_word == 0) *s.abort_word = abort_code(kAbortMismatch, s.rank, t);
      *s.gave_up = 1;
      __threadfence_system();
      gave_up = 1;
    }
  }
  __syncthreads();
  const bool ok = gave_up == 0;
  if (threadIdx.x == 0) s.epochs[blockIdx.x] = epoch;
  return ok;
}

}  // namespace seam::kernels::cuda::device
