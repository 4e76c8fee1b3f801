// Token-slice moves over attention TP and, for input-scattered batches, over the full TP group
// (§3.2): a rank's slice is the contiguous chunk `rank` of its rows split into equal parts (rows
// are padded to a multiple of attn_tp, so the chunks divide); a gather concatenates the slices in
// rank order; a reduce-scatter completes a partial sum onto the slice.
#pragma once

#include "seam/tensor.h"
#include "runtime/boundary/rows/process_groups.h"
#include "seam/work.h"

namespace seam::boundary::rows {

/// This rank's slice of `rows` over `group` (ATTN_TP or TP), as a view. ValueError when the rows do
/// not divide ("Expected total tokens {n} % tp_size {tp} to be 0" for TP).
Tensor token_slice(const ProcessGroups& groups, GroupKind group, const Tensor& rows);

/// dst (all rows) := the slices of every attention-TP rank, in rank order.
comm::Work attn_tp_gather(ProcessGroups& groups, const Tensor& slice, const Tensor& dst);
/// dst (this rank's slice) := its rows of the attention-TP sum of `partial`.
comm::Work attn_tp_reduce_scatter(ProcessGroups& groups, const Tensor& partial, const Tensor& dst);
/// Input-scattered (§2.6 #6, #13): dst := this rank's slice of the TP sum of `partial`.
comm::Work tp_reduce_scatter(ProcessGroups& groups, const Tensor& partial, const Tensor& dst);
/// dst (all rows) := every TP rank's slice, in rank order.
comm::Work tp_gather(ProcessGroups& groups, const Tensor& slice, const Tensor& dst);

}  // namespace seam::boundary::rows
