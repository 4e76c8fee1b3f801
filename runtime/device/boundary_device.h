// BoundaryDevice: runs a rank's stage boundaries (runtime/boundary: the stage runner, row moves,
// residual helpers, pipeline handoff) on CUDA device tensors. Attaching it gives every group of a
// ProcessGroups its device collectives (one DeviceCommunicator per group) and installs the device
// kernels of the residual path; from then on each tensor's Device decides the path, so the planner
// and the engine's calls stay as they are on host.
//
// Boundary work on device tensors is enqueued on the calling thread's current stream (StreamGuard)
// and does not wait for the GPU: a row move's Work is complete once enqueued, and the next kernel
// on that stream sees its result. A failure (a dead peer, a passed deadline) aborts the group's
// device communicator: its next call throws, and check() throws it after the engine synchronised
// its stream. Norm weights must be on the device too (residual::RmsNorm of a device weight).
// Workspaces are allocated with cudaMalloc on first use and when a batch grows: run one forward of
// the largest batch before capturing a CUDA graph.
#pragma once

#include <array>
#include <memory>

#include "runtime/boundary/fusion.h"
#include "runtime/boundary/rows/process_groups.h"
#include "seam/device_communicator.h"

namespace seam::device {

class BoundaryDevice {
 public:
  /// Collective over the world of `groups` (every rank calls it, all ranks on one host).
  /// `device`: this rank's CUDA ordinal (-1: the current device). `groups` must outlive it.
  static std::unique_ptr<BoundaryDevice> attach(boundary::rows::ProcessGroups& groups, int device = -1);
  /// Detaches the device collectives from the groups.
  ~BoundaryDevice();
  BoundaryDevice(const BoundaryDevice&) = delete;
  BoundaryDevice& operator=(const BoundaryDevice&) = delete;

  int device() const { return device_; }
  /// The device communicator of `group` (null for a group of one rank, and for WORLD).
  DeviceCommunicator* communicator(boundary::rows::GroupKind group) const;
  /// The pipeline handoff's: this TP rank's ranks across the stages, rank = pp rank (null with one
  /// stage, or more than 8, where device rows go through host memory).
  DeviceCommunicator* pipeline() const { return pipeline_.get(); }
  /// Throws the failure that aborted any group's device communicator.
  void check() const;
  /// Seam's fused all-reduce + add + RMSNorm on these groups as a fusion provider (§7), the
  /// built-in candidate for device tensors: give it to every stage (StageOptions::fusions).
  std::shared_ptr<const boundary::FusionProvider> fusions() const;

 private:
  BoundaryDevice(boundary::rows::ProcessGroups& groups, int device);

  boundary::rows::ProcessGroups& groups_;
  int device_;
  std::array<std::shared_ptr<DeviceCommunicator>, boundary::rows::kGroupKindCount> comms_{};
  std::shared_ptr<DeviceCommunicator> pipeline_;
};

}  // namespace seam::device
