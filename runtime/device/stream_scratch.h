// Device scratch for one staged call, allocated and freed in the order of the call's stream (the
// stream's memory pool keeps it between calls), so the caller never waits for it.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "runtime/device/device_comm_impl.h"

namespace seam::device {

class StreamScratch {
 public:
  /// A failed allocation aborts the communicator and throws (check_launch), naming `call`.
  StreamScratch(DeviceCommunicatorImpl& d, DeviceCall call, size_t bytes, cudaStream_t stream) : stream_(stream) {
    d.check_launch(cudaMallocAsync(&p_, std::max<size_t>(bytes, 1), stream), call);
  }
  ~StreamScratch() { cudaFreeAsync(p_, stream_); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace seam::device
