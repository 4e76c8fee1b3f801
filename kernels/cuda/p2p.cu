#include "kernels/cuda/p2p.h"

#include "kernels/cuda/peer_sync.cuh"

namespace seam::kernels::cuda {
namespace {

__global__ void p2p_wait_kernel(P2pWait w) {
  const uint32_t target = *w.count + w.ahead;
  if (!device::wait_flag(w.sync, w.flag, target, w.peer) || !w.signature) return;
  if (*reinterpret_cast<const volatile uint64_t*>(w.signature) != w.sync.signature) {
    if (*w.sync.abort_word == 0) *w.sync.abort_word = abort_code(kAbortMismatch, w.sync.rank, w.peer);
    *w.sync.gave_up = 1;
    __threadfence_system();
  }
}

__global__ void p2p_signal_kernel(P2pSignal s) {
  const uint32_t value = *s.count + 1;
  *s.count = value;
  __threadfence_system();  // the stream's copies before this kernel, then the flag
  if (s.remote_signature) *reinterpret_cast<volatile uint64_t*>(s.remote_signature) = s.signature;
  device::store_release(s.remote_flag, value);
}

}  // namespace

cudaError_t launch_p2p_wait(const P2pWait& wait, cudaStream_t stream) {
  p2p_wait_kernel<<<1, 1, 0, stream>>>(wait);
  return cudaGetLastError();
}

cudaError_t launch_p2p_signal(const P2pSignal& signal, cudaStream_t stream) {
  p2p_signal_kernel<<<1, 1, 0, stream>>>(signal);
  return cudaGetLastError();
}

}  // namespace seam::kernels::cuda
