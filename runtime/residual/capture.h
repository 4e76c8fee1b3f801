// Auxiliary capture of a layer's output (§4.4). The callback is capture(value, owned): with
// owned = false the value may alias the mutable residual or a reusable communication buffer and the
// collector must copy it before retaining it; owned = true only for storage nothing else writes
// during this forward (a gathered capture move, a sum computed only for the capture, a residual the
// following stage's input path certifies it leaves untouched).
#pragma once

#include "seam/tensor.h"
#include "runtime/residual/storage.h"
#include "runtime/residual/forward_batch.h"
#include "runtime/residual/function_ref.h"

namespace seam::residual {

using Capture = FunctionRef<void(const Tensor& value, bool owned)>;

/// A capture before the read (at the stack's entry, or with a post-residual addition): the finished
/// output alone, borrowed; with a residual, output + residual computed into `workspace` (grown on
/// demand; the caller keeps it for the forward) and passed owned.
void capture_before_read(const Tensor& output, const Tensor* residual, Capture capture, Storage& workspace);

/// StageBoundary.capture_output's stream part: completes dynamic work (a carried sum, a handoff) on
/// the main contribution, snapshots a declared sum on a copy (the main partial stays owed), and
/// returns the updated handle with the owned snapshot. With skip_empty, a 0-row output is returned
/// untouched and nothing completes (captured = false).
struct CapturedOutput {
  LayerOutput output;
  OwnedTensor snapshot;
  bool captured = false;
};
CapturedOutput capture_output(const LayerOutput& h, ForwardBatch& batch, bool skip_empty = false);

}  // namespace seam::residual
