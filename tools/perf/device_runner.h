// The perf binaries' -M cuda path, as the driver sees it: no CUDA type here, so the driver builds
// without CUDA; device_runner.cpp, built only with CUDA, implements it.
#pragma once

#include <memory>
#include <string>

#include "seam/communicator.h"
#include "tools/perf/perf_args.h"
#include "tools/perf/perf_collective.h"

namespace seam::perf {

/// What the header says about a rank's GPU.
struct DeviceInfo {
  int device = 0;            ///< CUDA ordinal: local rank % GPU count
  std::string name;          ///< cudaDeviceProp::name
  std::string path;          ///< the DeviceCommunicator's path: "peer" or "staged"
  double copy_bytes_per_second = 0;  ///< device-to-device cudaMemcpyAsync, read + written
};

/// One rank's DeviceCommunicator, stream and device buffers for every row of a run.
class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  virtual const DeviceInfo& info() const = 0;
  /// Times a row's out-of-place and in-place calls on this rank with CUDA events: the median
  /// seconds per call into seconds[0] and [1]; with -c 1 the elements wrong into wrong[0] and [1].
  /// Collective, as the calls are.
  virtual void measure(const Shape& s, double seconds[2], double wrong[2]) = 0;
};

/// Picks this rank's GPU, makes the DeviceCommunicator from `host` and measures the GPU's copy
/// bandwidth (every rank at once). Collective. Only in builds with CUDA (SEAM_PERF_CUDA).
std::unique_ptr<DeviceRunner> make_device_runner(const PerfCollective& c, const PerfArgs& a,
                                                 std::shared_ptr<comm::Communicator> host);

}  // namespace seam::perf
