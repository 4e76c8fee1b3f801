#include "tools/sim/stage_executor.h"

#include <string>

#include "kernels/norm/elementwise.h"
#include "layouts/errors.h"
#include "runtime/boundary/rows/dp_moves.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/residual/add_norm.h"

namespace seam::sim {

using namespace boundary;
using residual::ForwardBatch;
using residual::LayerOutput;
using residual::ProducerOutput;

namespace {

const residual::StageRead& read_of(const StageDeclaration& d) {
  if (d.read == NORM_READ) return residual::norm_read();
  if (d.read == NORM_QUANT_READ) return residual::norm_quant_read();
  throw NotSupportedError("the simulator's stages read with NORM_READ or NORM_QUANT_READ, not " + std::string(d.read.name));
}

[[noreturn]] void unsupported(const std::string& what) {
  throw NotSupportedError("seam_decoder_sim's stage executor does not run " + what);
}

Tensor view_of(Buffer& storage, const Tensor& like, int64_t rows) {
  const size_t bytes = static_cast<size_t>(rows * like.cols) * dtype_size(like.dtype);
  if (storage.bytes() < bytes) storage = Buffer(bytes);
  return Tensor::contiguous(storage.data(), like.dtype, rows, like.cols);
}

}  // namespace

StageExecutor::StageExecutor(StageBoundary& stage, rows::ProcessGroups& groups)
    : stage_(stage),
      groups_(groups),
      norm_(*static_cast<residual::RmsNorm*>(const_cast<void*>(stage.norm()))),
      read_(read_of(stage.declaration())) {
  all_reduce_declared_ = [this](const Tensor& partial, ForwardBatch&) {
    rows::all_reduce(groups_, rows::group_of(*declared_group_), partial).wait();
    return partial;
  };
  all_reduce_carried_ = [this](const Tensor& partial, ForwardBatch&) {
    rows::all_reduce(groups_, rows::group_of(*carried_group_), partial).wait();
    return partial;
  };
  all_reduce_then_scatter_ = [this](const Tensor& partial, ForwardBatch& batch) {
    rows::all_reduce(groups_, rows::group_of(*carried_group_), partial).wait();
    return return_over_dp(DpStep::SCATTER, partial, batch);
  };
  deferred_dp_step_ = [this](const Tensor& partial, ForwardBatch& batch) {
    return return_over_dp(deferred_step_, partial, batch);
  };
}

Tensor StageExecutor::local_output(const Tensor& like, const BatchFacts& facts) {
  return view_of(local_output_, like, facts.local_rows());
}

Tensor StageExecutor::gathered_rows(const Tensor& like, const BatchFacts& facts) {
  return view_of(gathered_, like, facts.global_rows());
}

Tensor StageExecutor::return_over_dp(DpStep step, const Tensor& global, ForwardBatch& batch) {
  const Tensor local = local_output(global, batch.facts);
  switch (step) {
    case DpStep::SCATTER: rows::dp_scatter(batch.facts, global, local); break;
    case DpStep::REDUCE_SCATTER: rows::dp_reduce_scatter(groups_, batch.facts, global, local, scratch_); break;
    case DpStep::REDUCE_SCATTERV: rows::dp_reduce_scatterv(groups_, batch.facts, global, local); break;
    case DpStep::NONE: return global;
  }
  return local;
}

std::optional<residual::StageInput> StageExecutor::try_fused(const BoundPath& path, const residual::Contribution& pending,
                                                             residual::ResidualStream& stream, ForwardBatch& batch) {
  const FusionArgs args{pending.value, stream.residual(), &batch.facts, nullptr};
  auto accept = [&](const std::optional<FusedRead>& r) -> std::optional<residual::StageInput> {
    if (!r) return std::nullopt;
    stream.write(r->residual);
    return residual::StageInput{r->input};
  };
  if (pending.owed == residual::Owed::declared_sum)
    for (const FusedMlpInput& candidate : path.ffn_fusions)
      if (auto r = accept(candidate.run(args))) return r;
  if (pending.owed == residual::Owed::carried_sum && !pending.redistributes)
    for (const CarriedFusion& candidate : path.carried_fusions)
      if (auto r = accept(candidate.run(args))) return r;
  return std::nullopt;
}

residual::StageInput StageExecutor::prepare(const LayerOutput& h, ForwardBatch& batch) {
  residual::ResidualStream& stream = residual::current(batch);
  stream.check(h);
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  const residual::Contribution* pending = stream.pending();
  const bool plain = !pending || pending->update->adds_plainly();
  const EntryPaths& paths = path.entry.paths_for(plain, stream.has_residual());
  EntryStep step = paths.step;
  if (stream.state() == residual::ResidualStream::State::written && paths.written) step = *paths.written;
  if (pending && pending->owed == residual::Owed::none && path.entry.input_sum && paths.completed) step = *paths.completed;
  if (step.pre_move != PreMove::NONE || step.residual_move != ResidualMove::NONE || step.input_move != InputMove::NONE)
    unsupported("the step '" + step.describe() + "'");

  switch (step.read) {
    case ReadKind::UPDATE_READ:
    case ReadKind::DP_REPLICATE_GATHER: {
      residual::ReadResult r;
      if (stream.state() == residual::ResidualStream::State::initial) {
        r = read_.read(read_.enter(h.tensor()), norm_, {});
      } else if (stream.state() == residual::ResidualStream::State::written) {
        r = read_.read(stream.residual(), norm_, {});
      } else {
        if (step.read == ReadKind::UPDATE_READ && (step.tries_fusions || pending->owed == residual::Owed::carried_sum))
          if (auto fused = try_fused(path, *pending, stream, batch)) return *fused;
        const residual::FinishedOutput out = stream.finish(h, batch);  // runs the owed sum, unfused
        r = read_.update_and_read(*out.update, out.value, out.has_residual ? &out.residual : nullptr, norm_, {});
      }
      stream.write(r.residual);
      if (step.read == ReadKind::UPDATE_READ) return r.input;
      const Tensor global = gathered_rows(r.input.values, batch.facts);
      rows::dp_gather(groups_, batch.facts, r.input.values, global, rows::DpGatherMode::REPLICATE, scratch_);
      return {global};
    }
    case ReadKind::DP_PARTIAL_GATHER: {
      // Attention-TP rank 0 adds the residual into its partial; the DP gather sums the partials
      // (completing the attention-TP sum) and places every replica's rows; this replica's rows of
      // the sum become the residual, and the norm reads the gathered rows.
      if (!pending || pending->owed != residual::Owed::declared_sum || !stream.has_residual())
        unsupported("a DP partial gather without a declared partial and a residual");
      const Tensor partial = pending->value;
      const Tensor residual = stream.residual();
      if (groups_.attn().tp == 0) kernels::add_inplace(partial, residual);
      const Tensor global = gathered_rows(partial, batch.facts);
      rows::dp_gather(groups_, batch.facts, partial, global, rows::DpGatherMode::PARTIAL, scratch_);
      rows::dp_scatter(batch.facts, global, residual);
      stream.write(residual);
      return {global.empty() ? global : norm_.apply(global)};
    }
    case ReadKind::RESIDUAL_JOINS_SUM: break;
  }
  unsupported("the step '" + step.describe() + "'");
}

LayerOutput StageExecutor::finish(const Tensor& output, ForwardBatch& batch) {
  residual::ResidualStream& stream = residual::current(batch);
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  declared_group_ = path.stage.output.declared_sum();
  if (!declared_group_) return stream.leave(ProducerOutput::complete_tensor(output), residual::add_update());
  const residual::DeclaredSum declared{*declared_group_, all_reduce_declared_};
  return stream.leave(ProducerOutput::complete_tensor(output), residual::add_update(), &declared);
}

LayerOutput StageExecutor::from_pp(const rows::PipelineTensors& in, ForwardBatch& batch) {
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  declared_group_ = path.entry.input_sum;
  const residual::DeclaredSum declared{declared_group_.value_or(SumGroup::TP), all_reduce_declared_};
  return residual::arrive(batch, in.hidden_states, in.has_residual ? &in.residual : nullptr, residual::add_update(),
                          declared_group_ ? &declared : nullptr);
}

LayerOutput StageExecutor::finish_ffn(const FfnDecision& d, const Tensor& output, ForwardBatch& batch) {
  residual::ResidualStream& stream = residual::current(batch);
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  if (path.output_move.kind != OutputMoveKind::KEEP && path.output_move.kind != OutputMoveKind::RETURNS_OVER_DP)
    unsupported("the FFN output move '" + path.output_move.describe() + "'");
  if (d.declared_sum) unsupported("an FFN output with a declared sum");
  carried_group_ = d.carried_sum ? d.carried_sum : d.group;
  const residual::StageUpdate& add = residual::add_update();
  switch (d.completion) {
    case FfnCompletion::CARRY_SUM:
      return stream.leave(ProducerOutput::unreduced(output, *carried_group_, all_reduce_carried_), add);
    case FfnCompletion::CARRY_SUM_THEN_DP_SCATTER:
      return stream.leave(ProducerOutput::unreduced(output, *carried_group_, all_reduce_then_scatter_, true), add);
    case FfnCompletion::DEFER_DP_STEP:
      deferred_step_ = d.dp_step;
      return stream.leave(ProducerOutput::unreduced(output, *carried_group_, deferred_dp_step_, true), add);
    case FfnCompletion::COMPLETE_NOW: break;
  }
  // Compute completed its sum unless a reduce-scatter of the DP step completes it here.
  return stream.leave(ProducerOutput::complete_tensor(return_over_dp(d.dp_step, output, batch)), add);
}

LayerOutput StageExecutor::finish_mixer(const MixerDecision& d, const Tensor& output, ForwardBatch& batch) {
  residual::ResidualStream& stream = residual::current(batch);
  const residual::StageUpdate& add = residual::add_update();
  if (d.hands_on) {
    carried_group_ = d.carried_sum;
    return stream.leave(ProducerOutput::unreduced(output, *carried_group_, all_reduce_carried_), add);
  }
  if (d.declared_sum) {
    declared_group_ = d.declared_sum;
    const residual::DeclaredSum declared{*declared_group_, all_reduce_declared_};
    return stream.leave(ProducerOutput::complete_tensor(output), add, &declared);
  }
  return stream.leave(ProducerOutput::complete_tensor(output), add);
}

StageExecutor::Exit::Exit(StageExecutor& owner, ForwardBatch& batch) : owner_(owner), batch_(batch) {
  const StageBoundary& s = owner.stage_;
  if (s.kind() == StageKind::FFN)
    ffn_.emplace(batch.exit_flags, s.decide_ffn_exit(batch.facts));
  else
    mixer_.emplace(batch.exit_flags, s.mixer_decision(batch.facts));
}

bool StageExecutor::Exit::compute_skips_sum() const {
  return ffn_ ? ffn_->flags().compute_skips_sum() : mixer_->skips_reduction();
}

LayerOutput StageExecutor::Exit::finish(const Tensor& output) {
  return ffn_ ? owner_.finish_ffn(ffn_->decision(), output, batch_) : owner_.finish_mixer(mixer_->decision(), output, batch_);
}

}  // namespace seam::sim
