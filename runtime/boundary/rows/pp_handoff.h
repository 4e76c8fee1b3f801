// Pipeline handoff transport: moves the hidden states and residual a stage's to_pp() packaged to
// the same TP rank of the next pipeline stage, over the world communicator's point-to-point
// operations. A small header (each tensor's rows, cols, dtype, whether a residual follows) goes
// first, so the receiver sizes its buffers from what actually arrives. The two may have different
// row counts: a residual kept on attention-TP slices travels beside hidden states on full rows. Packaging (what to send, and what the
// receiver's from_pp rebuilds) is the residual stream's job; this only moves the bytes. Device
// tensors move on the stages' device send/recv where seam::cuda attached one
// (ProcessGroups::pipeline_device), ordered on the current stream; otherwise through host memory.
#pragma once

#include "seam/tensor.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/residual/storage.h"

namespace seam::boundary::rows {

/// What crosses a pipeline cut: hidden states and, when the stream had one, the residual.
struct PipelineTensors {
  Tensor hidden_states;
  Tensor residual;
  bool has_residual = false;
  /// hidden_states is a raw partial the sender kept for the receiver's declared input sum
  /// (to_pp's preserve_declared); false when the sender completed it. The receiver re-declares
  /// the sum only when set, so an output completed before the cut is not summed twice.
  bool declared_partial = false;
};

class PipelineHandoff {
 public:
  /// `device`: where received tensors land (host memory by default, or this rank's CUDA device).
  explicit PipelineHandoff(ProcessGroups& groups, Device device = {}) : groups_(groups), device_(device) {}

  /// Sends to the next stage (same TP rank); returns once the data has left this rank's buffers
  /// (device rows: once the send is on the current stream, which later work follows).
  /// ValueError on the last stage or when the residual's hidden size or dtype differ from the
  /// hidden states'.
  void send(const PipelineTensors& tensors);
  /// Receives from the previous stage into this handoff's own buffers, valid until the next receive.
  PipelineTensors receive();

 private:
  ProcessGroups& groups_;
  Device device_;
  residual::Storage hidden_, residual_;            ///< what receive() returns, on device_
  residual::Storage staged_hidden_, staged_residual_;  ///< host copies of device tensors in transit
};

}  // namespace seam::boundary::rows
