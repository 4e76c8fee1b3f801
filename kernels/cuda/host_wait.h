// A one-thread kernel that holds a stream until a counter in host-mapped memory reaches a target:
// where the staged path's stream-ordered calls wait for the progress thread's host collective.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace seam::kernels::cuda {

struct HostWait {
  const volatile uint64_t* counter;  ///< device pointer to the host-mapped counter
  uint64_t target;                   ///< the kernel returns once *counter >= target
  volatile uint32_t* abort_word;     ///< the communicator's abort word (device pointer)
  volatile uint32_t* gave_up;        ///< set when the wait gives up (abort or deadline)
  uint64_t timeout_ns;               ///< gives up after this long without the counter moving
  int rank;                          ///< reported in the abort word on a timeout
};

/// Enqueues the wait on `stream`.
cudaError_t launch_host_wait(const HostWait& wait, cudaStream_t stream);

}  // namespace seam::kernels::cuda
