#include "runtime/device/pointer_check.h"

#include <cuda_runtime_api.h>

#include <string>

#include "seam/errors.h"
#include "transports/cuda_peer/driver_api.h"

namespace seam::device {

void PointerCheck::require_device(const void* p, size_t bytes, const char* op, const char* what) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  const std::string where = std::string("seam: device ") + op + ": " + what;
  if (!p) throw ValueError(where + " is null");
  if (bytes > UINTPTR_MAX - at) throw ValueError(where + ": the byte count overflows");
  auto it = known_.upper_bound(at);
  if (it != known_.begin()) {
    --it;
    if (at >= it->first && at < it->second.end) {
      if (at + bytes <= it->second.end) return;
      known_.erase(it);  // the range may have been freed and allocated again larger: ask again
    }
  }
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    throw ValueError(where + " is not memory CUDA knows (a host pointer?): pass device memory");
  }
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    throw ValueError(where + " is host memory: device calls take device memory (use the host Communicator)");
  if (a.device != device_)
    throw ValueError(where + " is on CUDA device " + std::to_string(a.device) + ", the communicator's is " +
                     std::to_string(device_));
  CUdeviceptr base = 0;
  size_t size = 0;
  if (transport::cuda_peer::driver().mem_get_address_range(&base, &size, static_cast<CUdeviceptr>(at)) != CUDA_SUCCESS)
    throw ValueError(where + ": CUDA cannot tell its allocation");
  const uintptr_t end = static_cast<uintptr_t>(base) + size;
  known_[static_cast<uintptr_t>(base)] = Range{end};
  if (at + bytes > end)
    throw ValueError(where + " runs " + std::to_string(at + bytes - end) + " bytes past the end of its allocation");
}

}  // namespace seam::device
