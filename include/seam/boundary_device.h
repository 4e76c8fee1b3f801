// Device tensors in the planner facade (<seam/boundary.h>; library seam::cuda). Attach this rank's
// GPU to its Groups, then hand the boundaries device tensors: norm weights, the stack input,
// compute's outputs. Row moves, sums and the fused all-reduce + add + RMSNorm then run on device
// collectives, enqueued on the calling thread's stream (StreamScope) without host waits: a
// boundary call returns once its work is enqueued, and the next kernel on the stream sees it.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "seam/boundary.h"

namespace seam::boundary {

/// This rank's GPU attached to its Groups (one device communicator per group, and one along the
/// pipeline). Detached when destroyed; must outlive the stages and forwards that use it.
class DeviceBoundary {
 public:
  /// Collective over the groups' world (every rank calls it; all ranks on one host). `device`:
  /// this rank's CUDA ordinal (-1: the current device). Stages made on `groups` afterwards take
  /// the fused all-reduce + add + RMSNorm on device; `groups` must outlive the attachment.
  static std::unique_ptr<DeviceBoundary> attach(Groups& groups, int device = -1);
  ~DeviceBoundary();
  DeviceBoundary(const DeviceBoundary&) = delete;
  DeviceBoundary& operator=(const DeviceBoundary&) = delete;

  /// The CUDA ordinal the boundaries run on.
  int device() const;
  /// Throws the failure that aborted any of the groups' device communicators (a peer died, a
  /// deadline passed); call it after synchronising the stream, as work on it returns no status.
  void check() const;

  struct Impl;

 private:
  explicit DeviceBoundary(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Makes `stream` the stream the calling thread's boundary work goes on for the scope's life, then
/// restores the previous one (without a scope: the legacy default stream).
class StreamScope {
 public:
  explicit StreamScope(cudaStream_t stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  cudaStream_t previous_;
};

}  // namespace seam::boundary
