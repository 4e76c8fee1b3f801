#include "kernels/cuda/host_wait.h"

#include "kernels/cuda/peer_sync.cuh"

namespace seam::kernels::cuda {
namespace {

__global__ void host_wait_kernel(HostWait w) {
  uint64_t seen = *w.counter;
  if (seen >= w.target) return;
  uint64_t start = device::global_ns();
  for (;;) {
    __nanosleep(200);
    const uint64_t now = *w.counter;
    if (now >= w.target) return;
    // The deadline is on progress: calls queued ahead of this one move the counter too.
    if (now != seen) {
      seen = now;
      start = device::global_ns();
    }
    if (*w.abort_word != 0) break;
    if (device::global_ns() - start > w.timeout_ns) {
      if (*w.abort_word == 0) *w.abort_word = abort_code(kAbortTimeout, w.rank, -1);
      break;
    }
  }
  *w.gave_up = 1;
  __threadfence_system();
}

}  // namespace

cudaError_t launch_host_wait(const HostWait& wait, cudaStream_t stream) {
  host_wait_kernel<<<1, 1, 0, stream>>>(wait);
  return cudaGetLastError();
}

}  // namespace seam::kernels::cuda
