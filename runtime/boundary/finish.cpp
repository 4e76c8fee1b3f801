// StageRunner's producer half: publishing outputs (PARTIAL finish, exit scopes and their finish,
// postprocess) and pipeline reception. Every completion applies a decision made before compute.
#include <cstdint>
#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/cp_moves.h"
#include "runtime/boundary/rows/dp_moves.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/boundary/runner.h"

namespace seam::boundary {

using residual::ForwardBatch;
using residual::LayerOutput;
using residual::ProducerOutput;

LayerOutput StageRunner::finish(const Tensor& output, ForwardBatch& batch) {
  if (!stage_.plan().finishes_directly()) throw UsageError("use the stage exit scope for an FFN or single-stage mixer");
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  if (const auto group = path.stage.output.declared_sum()) {
    const residual::DeclaredSum sum = declared(*group);
    return residual::current(batch).leave(ProducerOutput::complete_tensor(output), update_, &sum);
  }
  return leave_complete(output, batch);
}

LayerOutput StageRunner::leave_complete(const Tensor& value, ForwardBatch& batch) {
  if (update_.at_producer()) return residual::write_at_producer(batch, value, update_);
  return residual::current(batch).leave(ProducerOutput::complete_tensor(value), update_);
}

Tensor StageRunner::return_over_dp(DpStep step, const Tensor& global, const BatchFacts& facts) {
  const Tensor local = local_.get(global, facts.local_rows());
  switch (step) {
    case DpStep::REDUCE_SCATTERV: rows::dp_reduce_scatterv(groups_, facts, global, local); break;
    case DpStep::REDUCE_SCATTER: rows::dp_reduce_scatter(groups_, facts, global, local, scratch_); break;
    case DpStep::SCATTER:
    case DpStep::NONE: rows::dp_scatter(facts, global, local); break;
  }
  return local;
}

LayerOutput StageRunner::finish_ffn(const FfnDecision& d, const Tensor& output, ForwardBatch& batch) {
  residual::ResidualStream& stream = residual::current(batch);
  const ScratchClaim claim(*this, batch);
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  switch (d.completion) {
    case FfnCompletion::CARRY_SUM:
      return stream.leave(ProducerOutput::unreduced(output, *d.carried_sum, all_reduce_of(*d.carried_sum)), update_);
    case FfnCompletion::CARRY_SUM_THEN_DP_SCATTER:
      return stream.leave(ProducerOutput::unreduced(output, *d.carried_sum, carried_then_scatter_ref_, true), update_);
    case FfnCompletion::DEFER_DP_STEP: {
      const residual::CompleteSum& step =
          d.dp_step == DpStep::REDUCE_SCATTERV ? deferred_reduce_scatterv_ref_ : deferred_reduce_scatter_ref_;
      return stream.leave(ProducerOutput::unreduced(output, *d.carried_sum, step, true), update_);
    }
    case FfnCompletion::COMPLETE_NOW: break;
  }
  // The transform runs on the contribution first: on the complete output, or — when permitted —
  // on the partial a reduce-scatter completes next.
  if (path.stage.output.transform && path.stage.output.transform->apply) path.stage.output.transform->apply(output);
  Tensor value = output;
  switch (path.output_move.kind) {
    case OutputMoveKind::KEEP: break;
    case OutputMoveKind::RETURNS_OVER_DP: value = return_over_dp(d.dp_step, output, batch.facts); break;
    case OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER: {
      // The output sits on this rank's slice, like the residual: update there, then gather the
      // written residual back to attention rows (the stream is written). The update has consumed
      // its state (MHC's coefficients): only the written residual moves, so any update may gather.
      const Tensor updated = stream.has_residual() ? update_.update(output, stream.residual()) : output;
      const Tensor full = local_.get(updated, updated.rows * groups_.size(rows::GroupKind::ATTN_TP));
      rows::attn_tp_gather(groups_, updated, full).wait();
      return stream.write(full);
    }
    case OutputMoveKind::CP_REDUCE_SCATTER:  // completes the sum compute left (mlp_reduce_scatter)
      if (d.flags.mlp_reduce_scatter) {
        const Tensor shard = local_.get(output, output.rows / groups_.size(rows::GroupKind::ATTN_CP));
        rows::cp_reduce_scatter(groups_, output, shard);
        value = shard;
        break;
      }
      [[fallthrough]];  // postprocess: compute already reduced the output
    case OutputMoveKind::CP_TAKE_BACK:  // after compute's own all-reduce
      value = cp_take_back(output, batch.facts, local_);
      break;
    case OutputMoveKind::OUTPUT_ON_RESIDUAL_SHARD: {
      // Full rows onto the residual's slice: a TP reduce-scatter completes the sum compute left,
      // else a slice of the complete output; handing full rows on, update there and gather back.
      const Tensor slice = local_.get(output, output.rows / groups_.size(rows::GroupKind::TP));
      if (path.output_move.completes_sum && d.flags.mlp_reduce_scatter)
        rows::tp_reduce_scatter(groups_, output, slice).wait();
      else
        kernels::copy(rows::token_slice(groups_, rows::GroupKind::TP, output), slice);
      if (!path.output_move.gathers_back) {
        value = slice;
        break;
      }
      const Tensor updated = stream.has_residual() ? update_.update(slice, stream.residual()) : slice;
      const Tensor full = scratch_.get(updated, output.rows);
      rows::tp_gather(groups_, updated, full).wait();
      return stream.write(full);
    }
    case OutputMoveKind::DP_CP_TAKE_BACK: {  // this CP rank's shard of its replica's rows
      const std::vector<int64_t> shards = rows::dp_cp_shard_rows(groups_, batch.facts);
      const Tensor shard =
          local_.get(output, shards[static_cast<size_t>(groups_.rank_in(rows::GroupKind::ATTN_CP))]);
      rows::dp_cp_take_back(groups_, batch.facts, output, shards, shard);
      value = shard;
      break;
    }
  }
  if (d.declared_sum && !update_.at_producer()) {
    const residual::DeclaredSum sum = declared(*d.declared_sum);
    return stream.leave(ProducerOutput::complete_tensor(value), update_, &sum);
  }
  return leave_complete(value, batch);
}

LayerOutput StageRunner::finish_mixer(const MixerDecision& d, const Tensor& output, ForwardBatch& batch) {
  residual::ResidualStream& stream = residual::current(batch);
  if (d.hands_on)
    return stream.leave(ProducerOutput::unreduced(output, *d.carried_sum, all_reduce_of(*d.carried_sum)), update_);
  if (d.declared_sum) {
    const residual::DeclaredSum sum = declared(*d.declared_sum);
    return stream.leave(ProducerOutput::complete_tensor(output), update_, &sum);
  }
  return leave_complete(output, batch);
}

LayerOutput StageRunner::postprocess(const Tensor& output, ForwardBatch& batch) {
  // Compute ran without an exit scope, so nothing was skipped: only the rows move back.
  FfnDecision complete_now;
  complete_now.dp_step = DpStep::SCATTER;
  return finish_ffn(complete_now, output, batch);
}

LayerOutput StageRunner::from_pp(const rows::PipelineTensors& tensors, ForwardBatch& batch,
                                 const residual::StageUpdate& arriving_update, bool allow_missing_residual) {
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  // A stream the producer left written travels as its hidden states alone; a pending one needs its
  // residual.
  if (!path.arrives_written && !tensors.has_residual && !allow_missing_residual)
    throw ValueError("from_pp: the received tensors carry no residual, but the previous stage leaves its stream "
                     "pending (allow_missing_residual reads the hidden states as a written stream)");
  const Tensor* residual = !path.arrives_written && tensors.has_residual ? &tensors.residual : nullptr;
  // Only a partial the sender kept raw still owes the entry's sum; a completed one is summed once.
  const bool owes_sum = tensors.declared_partial && path.entry.input_sum;
  const std::optional<residual::DeclaredSum> sum =
      owes_sum ? std::optional(declared(*path.entry.input_sum)) : std::nullopt;
  return residual::arrive(batch, tensors.hidden_states, residual, arriving_update, sum ? &*sum : nullptr);
}

StageRunner::Exit::Exit(StageRunner& runner, ForwardBatch& batch) : runner_(runner), batch_(batch) {
  const StageBoundary& stage = runner.stage_;
  if (stage.kind() == StageKind::FFN)
    ffn_.emplace(batch.exit_flags, stage.decide_ffn_exit(batch.facts));
  else
    mixer_.emplace(batch.exit_flags, stage.mixer_decision(batch.facts));
}

const ExitFlags& StageRunner::Exit::flags() const { return ffn_ ? ffn_->flags() : mixer_->decision().flags; }

LayerOutput StageRunner::Exit::finish(const Tensor& output) {
  if (finished_) throw UsageError("an exit is finished once");
  finished_ = true;
  return ffn_ ? runner_.finish_ffn(ffn_->decision(), output, batch_)
              : runner_.finish_mixer(mixer_->decision(), output, batch_);
}

LayerOutput StageRunner::Exit::finish(const residual::HandoffOutput& handoff) {
  if (!ffn_ || !ffn_->flags().defer_moe_finalize) throw UsageError("unrequested deferred MoE handoff");
  if (finished_) throw UsageError("an exit is finished once");
  finished_ = true;
  return residual::current(batch_).leave(ProducerOutput::from_handoff(handoff), runner_.update_);
}

}  // namespace seam::boundary
