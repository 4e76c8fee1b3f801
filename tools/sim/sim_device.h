// Where the simulator's boundaries run: host memory, or (--device cuda) this rank's GPU, number
// local_rank % device_count, with Seam's device path attached to the rank's process groups and
// every boundary call on one stream of its own.
#pragma once

#include <memory>
#include <string>

#include "seam/tensor.h"
#include "runtime/boundary/fusion.h"
#include "runtime/boundary/rows/process_groups.h"

namespace seam::sim {

class SimDevice {
 public:
  /// Why --device cuda cannot run here ("" when it can): no CUDA in the build, or no usable GPU.
  static std::string unavailable();
  /// Host memory (cuda = false), or attaches the device path (collective over the groups' world).
  /// NotSupportedError for cuda in a build without CUDA.
  SimDevice(boundary::rows::ProcessGroups& groups, bool cuda);
  ~SimDevice();
  SimDevice(const SimDevice&) = delete;
  SimDevice& operator=(const SimDevice&) = delete;

  /// Where the boundary's tensors live.
  Device device() const { return device_; }
  /// Seam's fused all-reduce + add + RMSNorm for this memory (the host or the device candidate).
  std::shared_ptr<const boundary::FusionProvider> fusions(boundary::rows::ProcessGroups& groups) const;
  /// Waits for the stream and throws any device failure.
  void finish() const;

 private:
  struct Cuda;
  Device device_{};
  std::unique_ptr<Cuda> cuda_;
};

}  // namespace seam::sim
