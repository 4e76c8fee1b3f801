// Two-batch overlap (§4.5): each microbatch runs on its own stream. split_microbatches completes the
// parent's owed work and hands each child its token range of the output and residual (views, no
// copy); merge_microbatches hands the children's outputs back, concatenated in token order, as the
// parent's pending contribution. Interleaved microbatches never share a stream.
#pragma once

#include <cstdint>

#include <span>

#include "runtime/residual/forward_batch.h"

namespace seam::residual {

/// Splits the parent's stream by `rows` (token rows per microbatch, in order, summing to the
/// output's rows). Child i gets a fresh stream — Pending(rows of h, same update) over its rows of the
/// residual, Written when the parent was written, Initial when it was — and outputs[i] is what it
/// must pass to its first boundary. The parent's stream is released until the merge.
void split_microbatches(ForwardBatch& parent, const LayerOutput& h, std::span<const int64_t> rows,
                        std::span<ForwardBatch* const> children, std::span<LayerOutput> outputs);

/// Hands every child's output and residual on (owed work completed), copies them into `hidden` and
/// `residual` at their token offsets (a no-op where a child still works on the parent's storage),
/// releases the children's streams, and makes the parent Pending(hidden, the children's update) over
/// `residual` — or Written(hidden) when the children were written. Returns the parent's output.
LayerOutput merge_microbatches(ForwardBatch& parent, std::span<ForwardBatch* const> children,
                               std::span<const LayerOutput> outputs, const Tensor& hidden, const Tensor& residual);

}  // namespace seam::residual
