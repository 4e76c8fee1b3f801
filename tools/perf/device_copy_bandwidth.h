// The bound of the device perf binaries: this GPU's device-to-device copy bandwidth.
#pragma once

#include <cuda_runtime_api.h>

namespace seam::perf {

/// Bytes read + written per second of a 256 MiB cudaMemcpyAsync on `stream` (median of five).
/// Throws std::runtime_error on a CUDA error.
double device_copy_bandwidth(cudaStream_t stream);

}  // namespace seam::perf
