// DeviceGroup: one group's collectives on CUDA device tensors, as the row moves call them. seam::cuda
// provides it (seam::device::BoundaryDevice::attach sets one per group of a ProcessGroups).
// Calls are ordered on the calling thread's current stream; the Work they return is complete
// once the call is enqueued (the next kernel on that stream sees the result). A failure aborts the
// group's device communicator: it is thrown by that group's next call and by BoundaryDevice::check.
#pragma once

#include <cstddef>
#include <span>

#include "seam/tensor.h"
#include "seam/work.h"

namespace seam::boundary::rows {

class DeviceGroup {
 public:
  virtual ~DeviceGroup() = default;
  /// inout := the sum over the group (contiguous rows).
  virtual comm::Work all_reduce(const Tensor& inout) = 0;
  /// recv := this rank's block of the sum of send (send holds size * recv rows).
  virtual comm::Work reduce_scatter(const Tensor& send, const Tensor& recv) = 0;
  /// recv := this rank's counts[rank] elements of the sum of send (sum(counts) elements).
  virtual comm::Work reduce_scatterv(const Tensor& send, const Tensor& recv, std::span<const size_t> counts) = 0;
  /// recv := every rank's send, in group rank order.
  virtual comm::Work all_gather(const Tensor& send, const Tensor& recv) = 0;
  /// recv := rank r's counts[r] elements, in group rank order (send holds this rank's).
  virtual comm::Work all_gatherv(const Tensor& send, const Tensor& recv, std::span<const size_t> counts) = 0;
  /// t (contiguous) to / from group rank `peer`; a send holds the stream until the peer has it.
  virtual comm::Work send(const Tensor& t, int peer) = 0;
  virtual comm::Work recv(const Tensor& t, int peer) = 0;
};

}  // namespace seam::boundary::rows
