// The residual-stream half of prepared branches (LongCat's shortcut, §4.6). A branch reuses an input
// its source stage already read: it forks a written stream instead of reading again, and its final
// output merges with the source's other contribution so the residual is added exactly once. The
// row moves between the source's rows and the branch's come from the boundary (identity on
// ordinary rows).
#pragma once

#include "runtime/residual/forward_batch.h"

namespace seam::residual {

/// Moves a complete value from the source's rows to the branch's; unset = same rows.
using RowMove = FunctionRef<Tensor(const Tensor& value)>;

/// branch_input's stream step: the stream must hold a prepared input (written, nothing pending —
/// UsageError otherwise); replaces it with a fresh written stream over `branch_residual` (the
/// source residual on the branch's rows). Returns that stream's output.
LayerOutput fork_branch(ForwardBatch& batch, const Tensor& branch_residual);

/// merge_branch's stream step: h is the branch's pending output (UsageError when nothing is pending).
/// Completes it, moves output and residual to this branch's rows, adds it into `contribution` (the
/// other branch's complete output, in place), writes the residual and leaves the sum with the
/// branch output's update. Returns the merged output.
LayerOutput merge_branch(ForwardBatch& batch, const Tensor& contribution, const LayerOutput& h,
                         RowMove move_output = {}, RowMove move_residual = {});

}  // namespace seam::residual
