#include "runtime/residual/branch.h"

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/messages.h"

namespace seam::residual {

LayerOutput fork_branch(ForwardBatch& batch, const Tensor& branch_residual) {
  if (current(batch).state() != ResidualStream::State::written) throw UsageError(messages::kBranchNeedsPrepared);
  return written(branch_residual, batch);
}

LayerOutput merge_branch(ForwardBatch& batch, const Tensor& contribution, const LayerOutput& h, RowMove move_output,
                         RowMove move_residual) {
  ResidualStream& stream = current(batch);
  if (!stream.pending()) throw UsageError(messages::kMergeNeedsPending);
  const FinishedOutput out = stream.finish(h, batch);
  const Tensor value = move_output ? move_output(out.value) : out.value;
  kernels::add_inplace(contribution, value);
  if (out.has_residual) stream.write(move_residual ? move_residual(out.residual) : out.residual);
  else stream.write(contribution);  // nothing to add later: the merged output is the residual
  return stream.leave(ProducerOutput::complete_tensor(contribution), *out.update);
}

}  // namespace seam::residual
