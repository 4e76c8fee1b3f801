// StageRunner's row moves of complete values (§3.4) and the prepared-branch methods built on them
// (§4.6), plus the attention prepare's captures (§4.4).
#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/dp_moves.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/capture.h"

namespace seam::boundary {

using residual::ForwardBatch;
using residual::LayerOutput;
using rows::GroupKind;

namespace {
// Branches move rows between the declared rows of ordinary batches only (§3.5).
const BoundPath& branch_path(const StagePlan& plan, const BatchFacts& facts) {
  if (facts.variant() != BatchVariant::ORDINARY)
    throw NotSupportedError("branch transport requires ordinary batch rows");
  return plan.path(BatchVariant::ORDINARY);
}
}  // namespace

Tensor StageRunner::move_rows(const Tensor& value, Layout from, Layout to, const BatchFacts& facts, rows::Scratch& out) {
  if (from == to) return value;
  const RowMove checked = RowMove::checked(from, to);  // no CP, never both gather and cut
  Tensor rows = value;
  if ((checked.from - checked.to).has(TokenAxis::ATTN_TP_SCATTER)) {
    const Tensor full = out.get(rows, rows.rows * groups_.size(GroupKind::ATTN_TP));
    rows::attn_tp_gather(groups_, rows, full).wait();
    rows = full;
  }
  if ((checked.from - checked.to).has(TokenAxis::ATTN_DP)) {
    // A replicate gather zeroes non-leading attention-TP ranks' input in place: gather a copy.
    const Tensor copy = scratch_.get(rows, rows.rows);
    kernels::copy(rows, copy);
    const Tensor global = out.get(rows, facts.global_rows());
    rows::dp_gather(groups_, facts, copy, global, rows::DpGatherMode::REPLICATE, scratch_);
    rows = global;
  }
  if ((checked.to - checked.from).has(TokenAxis::ATTN_DP)) {
    const Tensor local = out.get(rows, facts.local_rows());
    rows::dp_scatter(facts, rows, local);
    rows = local;
  }
  if ((checked.to - checked.from).has(TokenAxis::ATTN_TP_SCATTER)) rows = rows::token_slice(groups_, GroupKind::ATTN_TP, rows);
  return rows;
}

residual::StageInput StageRunner::prepare(const LayerOutput& h, ForwardBatch& batch, const PrepareOptions& options) {
  const bool captures = options.capture_output || options.captured_last_layer_outputs;
  if (!captures) return prepare(h, batch, options.read);
  if (stage_.kind() != StageKind::ATTENTION) throw UsageError("an FFN prepare does not take a capture");
  residual::ResidualStream& stream = residual::current(batch);
  stream.check(h);
  const ScratchClaim claim(*this, batch);
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  // Complete the owed communication unfused: the capture sees the finished output (at an
  // input-scattered stack entry, the summed embedding rather than this rank's partial).
  LayerOutput entered;
  const LayerOutput completed = stream.complete(enter_stack(h, stream, path, entered), batch);
  residual::Capture after_read = options.capture_output;
  const bool initial = stream.state() == residual::ResidualStream::State::initial;
  if (options.capture_output && (initial || options.read.post_residual_addition)) {
    const Tensor output = initial ? completed.tensor() : stream.pending() ? stream.pending()->value : stream.residual();
    const bool has_residual = stream.has_residual() && stream.pending();
    residual::capture_before_read(output, has_residual ? &stream.residual() : nullptr, options.capture_output,
                                  capture_workspace_);
    after_read = {};
  }
  const residual::StageInput input = prepare(completed, batch, options.read);
  const Tensor residual = stream.residual();
  // Unmoved, the residual is owned only when the following FFN's input path certifies it leaves
  // this storage untouched.
  const bool certified = path.capture_preserves_residual && path.capture_preserves_residual(batch.facts);
  if (after_read) {
    // Back to the producer's rows; a move owns its result only when it gathers into fresh storage.
    const Tensor moved = move_rows(residual, *path.incoming.residual_to, path.incoming.produced.layout, batch.facts,
                                   captured_);
    after_read(moved, path.entry.capture_moves ? path.entry.capture_move_allocates : certified);
  }
  if (options.captured_last_layer_outputs) {
    if (path.entry.input_move == InputMove::ATTN_TP_GATHER) {
      // Its own scratch: capture_output above may have gathered into captured_ and been handed out
      // owned; reusing that buffer would overwrite (or, when it grows, free) the first capture.
      const Tensor full =
          captured_gathered_.get(residual, residual.rows * groups_.size(GroupKind::ATTN_TP));
      rows::attn_tp_gather(groups_, residual, full).wait();
      options.captured_last_layer_outputs(full, true);
    } else {
      options.captured_last_layer_outputs(residual, path.entry.input_move == InputMove::NONE && certified);
    }
  }
  return input;
}

Tensor StageRunner::branch_input(const Tensor& source_input, ForwardBatch& batch) {
  const BoundPath& path = branch_path(stage_.plan(), batch.facts);
  if (!path.branch) throw UsageError("branch_input needs a prepared branch stage (make_stages prepared_from)");
  residual::ResidualStream& stream = residual::current(batch);
  if (stream.state() != residual::ResidualStream::State::written)
    throw UsageError("a branch must start from a prepared stage input");
  const ScratchClaim claim(*this, batch);
  const Tensor residual =
      move_rows(stream.residual(), path.branch->residual.from, path.branch->residual.to, batch.facts, branch_residual_);
  residual::fork_branch(batch, residual);
  return move_rows(source_input, path.branch->input.from, path.branch->input.to, batch.facts, branch_);
}

Tensor StageRunner::branch_output(const Tensor& output, ForwardBatch& batch) {
  const BoundPath& path = branch_path(stage_.plan(), batch.facts);
  const ScratchClaim claim(*this, batch);
  return move_rows(output, path.stage.output.layout, path.stage.handed_on, batch.facts, branch_);
}

LayerOutput StageRunner::merge_branch(const Tensor& contribution, const LayerOutput& h, const StageRunner& source,
                                      ForwardBatch& batch) {
  const BoundPath& here = branch_path(stage_.plan(), batch.facts);
  const BoundPath& there = branch_path(source.stage_.plan(), batch.facts);
  const ScratchClaim claim(*this, batch);
  auto output_move = [&](const Tensor& v) { return move_rows(v, there.stage.handed_on, here.stage.handed_on, batch.facts, branch_); };
  auto residual_move = [&](const Tensor& v) {
    return move_rows(v, there.outgoing.residual, here.outgoing.residual, batch.facts, branch_residual_);
  };
  return residual::merge_branch(batch, contribution, h, output_move, residual_move);
}

}  // namespace seam::boundary
