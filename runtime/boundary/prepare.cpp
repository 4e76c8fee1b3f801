// StageRunner's consumer half: binding checks, path selection (§4.2 "bound prepare") and the
// execution of one EntryStep (§2.7) on the residual stream and the row moves.
#include <cstdint>
#include <algorithm>
#include <string>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/cp_moves.h"
#include "runtime/boundary/rows/dp_moves.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/add_norm.h"

namespace seam::boundary {

using residual::ForwardBatch;
using residual::LayerOutput;
using residual::Owed;
using residual::ResidualStream;
using rows::GroupKind;

namespace {
const char* owed_type(Owed owed) { return owed == Owed::handoff ? "HandoffOutput" : "UnreducedOutput"; }

// A DP gather runs through sums under SUM_LEN: it carries plain activations only.
void require_plain_input(const residual::StageInput& input) {
  if (input.quantized()) throw NotSupportedError("a quantised stage input cannot be DP-gathered (the gather sums)");
}
}  // namespace

StageRunner::StageRunner(const StageBoundary& stage, rows::ProcessGroups& groups, residual::RmsNorm& norm,
                         const residual::StageRead& read, const residual::StageUpdate& update)
    : stage_(stage), groups_(groups), norm_(norm), read_(read), update_(update) {
  // Fusion providers read the plan's norm as this RmsNorm: it must be the same object.
  if (stage.norm() != static_cast<const void*>(&norm))
    throw ValueError("a stage runner's norm must be the norm its stage was built with");
  const StageDeclaration& d = stage.declaration();
  if (read.norms_plainly() != d.read.norms_plainly || read.before_gather() != d.read.before_gather ||
      update.adds_plainly() != d.update.adds_plainly || update.at_producer() != d.update.at_producer)
    throw ValueError("the stage's residual operations do not match its declared capabilities");
  for (size_t g = 0; g < all_reduce_.size(); ++g) {
    const GroupKind kind = rows::group_of(static_cast<SumGroup>(g));
    all_reduce_[g] = [this, kind](const Tensor& partial, ForwardBatch&) {
      rows::all_reduce(groups_, kind, partial).wait();
      return partial;
    };
    all_reduce_refs_[g] = all_reduce_[g];
  }
  // A carried sum over DP-gathered rows: all-reduce over the output's group, then back to this
  // replica's rows. A deferred RS / RSv completes and returns in one step.
  const std::optional<SumGroup> group = stage.plan().path(BatchVariant::ORDINARY).stage.output.group;
  carried_then_scatter_ = [this, group](const Tensor& global, ForwardBatch& batch) {
    const ScratchClaim claim(*this, batch);
    if (group) rows::all_reduce(groups_, rows::group_of(*group), global).wait();
    return return_over_dp(DpStep::SCATTER, global, batch.facts);
  };
  // One completion per step (no per-batch state in the runner: interleaved microbatches may choose
  // different steps).
  deferred_reduce_scatter_ = [this](const Tensor& global, ForwardBatch& batch) {
    const ScratchClaim claim(*this, batch);
    return return_over_dp(DpStep::REDUCE_SCATTER, global, batch.facts);
  };
  deferred_reduce_scatterv_ = [this](const Tensor& global, ForwardBatch& batch) {
    const ScratchClaim claim(*this, batch);
    return return_over_dp(DpStep::REDUCE_SCATTERV, global, batch.facts);
  };
  carried_then_scatter_ref_ = carried_then_scatter_;
  deferred_reduce_scatter_ref_ = deferred_reduce_scatter_;
  deferred_reduce_scatterv_ref_ = deferred_reduce_scatterv_;
}

residual::DeclaredSum StageRunner::declared(SumGroup group) { return {group, all_reduce_of(group)}; }

StageRunner::ScratchClaim::ScratchClaim(StageRunner& runner, ForwardBatch& batch)
    : runner_(runner), stream_(residual::current(batch).liveness()), uses_before_(runner.scratch_uses()) {
  const std::shared_ptr<const int> owner = runner.scratch_owner_.lock();
  if (owner && owner != stream_)
    throw UsageError("a stage runner's buffers still hold another live stream's values: interleaved microbatches "
                     "need a stage runner each");
}

StageRunner::ScratchClaim::~ScratchClaim() {
  if (runner_.scratch_uses() != uses_before_) runner_.scratch_owner_ = stream_;
}

uint64_t StageRunner::scratch_uses() const {
  uint64_t n = 0;
  for (const rows::Scratch* s : {&scratch_, &pre_moved_, &residual_, &gathered_, &gathered_scales_, &local_, &captured_,
                                 &captured_gathered_, &branch_, &branch_residual_})
    n += s->uses();
  return n;
}

const EntryPaths& StageRunner::select_paths(const BoundPath& path, ResidualStream& stream) {
  const residual::Contribution* c = stream.pending();
  // A written or initial stream carries no update: any bound path reads it the same way.
  const EntryPaths& paths = path.entry.paths_for(c ? c->update->adds_plainly() : true, c && stream.has_residual());
  if (!c) return paths;
  const std::optional<SumGroup>& expected = path.entry.input_sum;
  if (c->owed == Owed::declared_sum && (!expected || c->group != *expected))
    throw UsageError("producer sum does not match the input declaration");
  if (c->owed == Owed::carried_sum || c->owed == Owed::handoff) {
    if (expected) throw UsageError("a declared input sum carried another completion");
    if (!stream.has_residual()) throw UsageError(std::string(owed_type(c->owed)) + " requires residual input");
  }
  return paths;
}

residual::StageInput StageRunner::prepare(const LayerOutput& h, ForwardBatch& batch,
                                          const residual::ReadOptions& options) {
  ResidualStream& stream = residual::current(batch);
  stream.check(h);
  const BoundPath& path = stage_.plan().path(batch.facts.variant());
  if (path.branch) throw UsageError("a prepared branch must enter through branch_input, not prepare");
  const ScratchClaim claim(*this, batch);
  LayerOutput entered;
  const LayerOutput& input = enter_stack(h, stream, path, entered);
  const EntryPaths& paths = select_paths(path, stream);
  const residual::Contribution* c = stream.pending();
  const bool written = stream.state() == ResidualStream::State::written;
  const EntryStep* step = &paths.step;
  // A declared sum already completed (capture, PP export) or a written stream's complete residual
  // owes nothing: the completed step runs no sum again.
  if ((written || (c && c->owed == Owed::none)) && path.entry.input_sum && paths.completed) step = &*paths.completed;
  if (written && paths.written) step = &*paths.written;
  return run_step(*step, path, stream, input, batch, options);
}

const LayerOutput& StageRunner::enter_stack(const LayerOutput& h, ResidualStream& stream, const BoundPath& path,
                                            LayerOutput& entered) {
  if (stream.state() != ResidualStream::State::initial || !path.entry.input_sum) return h;
  const residual::DeclaredSum sum = declared(*path.entry.input_sum);
  entered = stream.leave(residual::ProducerOutput::complete_tensor(h.tensor()), residual::add_update(), &sum);
  return entered;
}

residual::StageInput StageRunner::run_step(const EntryStep& step, const BoundPath& path, ResidualStream& stream,
                                           const LayerOutput& h, ForwardBatch& batch,
                                           const residual::ReadOptions& options) {
  const BatchFacts& facts = batch.facts;
  LayerOutput completed;
  const LayerOutput* current = &h;
  const residual::Contribution* c = stream.pending();
  const bool moves_rows = step.pre_move != PreMove::NONE || step.residual_move != ResidualMove::NONE ||
                          step.input_move != InputMove::NONE || step.read != ReadKind::UPDATE_READ;

  // Carried work chosen by the producer's exit: fused candidates first (plain add into a plain norm
  // on unmoved rows, never a redistributing sum), else completed unfused.
  if (c && c->owed == Owed::carried_sum && !c->redistributes && !moves_rows && c->update->adds_plainly() &&
      read_.norms_plainly() && c->value.rows > 0) {
    for (const CarriedFusion& candidate : path.carried_fusions) {
      if (auto fused = candidate.run({c->value, stream.residual(), &facts, options.post_residual_addition, c->group})) {
        stream.write(fused->residual);
        return {fused->input};
      }
    }
  }
  if (c && (c->owed == Owed::carried_sum || c->owed == Owed::handoff)) {
    completed = stream.complete(h, batch);
    current = &completed;
  }
  c = stream.pending();

  const bool initial = stream.state() == ResidualStream::State::initial;
  const bool written = stream.state() == ResidualStream::State::written;
  const bool owes_sum = c && c->owed == Owed::declared_sum;
  Tensor value = initial ? current->tensor() : written ? stream.residual() : c->value;
  Tensor residual = stream.residual();
  const bool has_residual = stream.has_residual() && !written;

  // 1. Row movement of the arriving output; 2. the residual follows the rows the read runs on.
  value = move_before_update(step.pre_move, value, facts);
  if (written) residual = value;  // a written stream reads its (moved) residual
  if (has_residual && step.residual_move == ResidualMove::ATTN_TP_GATHER) c->update->require_residual_gather();
  if (has_residual) residual = move_residual(step.residual_move, residual);

  // 3. Complete the owed sum, apply the update, read.
  // An attention's output transform runs on the complete sum, before the update.
  const std::optional<OutputTransform>& transform = path.incoming.produced.transform;
  auto update_and_read = [&](const Tensor& complete) {
    if (!initial && !written && transform && transform->apply) transform->apply(complete);
    if (initial) return read_.read(read_.enter(complete), norm_, options);
    if (written) return read_.read(residual, norm_, options);
    return read_.update_and_read(*c->update, complete, has_residual ? &residual : nullptr, norm_, options);
  };
  // The DP gather: every replica's rows at its offset; on a DP x CP batch each CP rank places its
  // shard inside its replica's slot (rows::dp_cp_shard_rows says where).
  auto dp_gather = [&](const Tensor& local, const Tensor& global, rows::DpGatherMode mode) {
    if (!step.places_cp_shards) return rows::dp_gather(groups_, facts, local, global, mode, scratch_);
    rows::dp_gather_cp_shards(groups_, facts, local, rows::dp_cp_shard_rows(groups_, facts), global, mode);
  };
  const bool sums_here = owes_sum && step.all_reduce.has_value();
  residual::ReadResult result;
  switch (step.read) {
    case ReadKind::UPDATE_READ: {
      if (sums_here && step.tries_fusions && has_residual) {
        for (const FusedMlpInput& candidate : path.ffn_fusions) {
          if (auto fused = candidate.run({value, residual, &facts, options.post_residual_addition, step.all_reduce})) {
            // The fused read replaces step 3 only: its input still moves to the compute rows
            // (a CP batch's FFN reads the gathered shards).
            stream.write(fused->residual);
            return move_input(step.input_move, {fused->input}, facts);
          }
        }
      }
      if (sums_here) all_reduce_of(*step.all_reduce)(value, batch);
      result = update_and_read(value);
      break;
    }
    case ReadKind::RESIDUAL_JOINS_SUM: {
      // Each rank adds its residual slice into its rows of the partial; the sum completes both.
      if (has_residual) kernels::add_inplace(rows::token_slice(groups_, GroupKind::ATTN_TP, value), residual);
      all_reduce_of(*step.all_reduce)(value, batch);
      result = read_.read(value, norm_, options);
      break;
    }
    case ReadKind::DP_PARTIAL_GATHER: {
      // Attention-TP rank 0 adds the residual into its partial; the DP gather's sum completes the
      // attention-TP sum and places every replica's rows; the new residual is this replica's rows.
      if (has_residual && groups_.attn().tp == 0) kernels::add_inplace(value, residual);
      const Tensor global = gathered_.get(value, facts.global_rows());
      dp_gather(value, global, rows::DpGatherMode::PARTIAL);
      const Tensor local = has_residual ? residual : residual_.get(value, value.rows);
      if (step.places_cp_shards)
        rows::dp_cp_take_back(groups_, facts, global, rows::dp_cp_shard_rows(groups_, facts), local);
      else
        rows::dp_scatter(facts, global, local);
      result = read_.read(global, norm_, options);
      result.residual = local;
      break;
    }
    case ReadKind::DP_REPLICATE_GATHER: {
      if (sums_here) all_reduce_of(*step.all_reduce)(value, batch);
      result = update_and_read(value);
      require_plain_input(result.input);
      const Tensor global = gathered_.get(result.input.values, facts.global_rows());
      dp_gather(result.input.values, global, rows::DpGatherMode::REPLICATE);
      result.input = {global};
      break;
    }
  }

  // 4. Move the read input to the rows compute runs on.
  result.input = move_input(step.input_move, result.input, facts);
  stream.write(result.residual);
  return result.input;
}

Tensor StageRunner::move_before_update(PreMove move, const Tensor& value, const BatchFacts& facts) {
  auto onto = [&](GroupKind group) { return pre_moved_.get(value, value.rows / groups_.size(group)); };
  switch (move) {
    case PreMove::NONE: return value;
    case PreMove::ATTN_TP_REDUCE_SCATTER: {  // completes the declared attention-TP sum on the slice
      const Tensor out = onto(GroupKind::ATTN_TP);
      rows::attn_tp_reduce_scatter(groups_, value, out).wait();
      return out;
    }
    case PreMove::TP_REDUCE_SCATTER: {
      const Tensor out = onto(GroupKind::TP);
      rows::tp_reduce_scatter(groups_, value, out).wait();
      return out;
    }
    case PreMove::ATTN_TP_SLICE:
    case PreMove::TP_SLICE: {  // a copy: the complete output's storage belongs to its producer
      const GroupKind group = move == PreMove::ATTN_TP_SLICE ? GroupKind::ATTN_TP : GroupKind::TP;
      const Tensor out = onto(group);
      kernels::copy(rows::token_slice(groups_, group, value), out);
      return out;
    }
    case PreMove::CP_REDUCE_SCATTER: {
      const Tensor out = onto(GroupKind::ATTN_CP);
      rows::cp_reduce_scatter(groups_, value, out);
      return out;
    }
    case PreMove::CP_TAKE_BACK: return cp_take_back(value, facts, pre_moved_);
  }
  return value;
}

Tensor StageRunner::cp_take_back(const Tensor& full, const BatchFacts& facts, rows::Scratch& out) {
  const std::span<const int64_t> shards = facts.cp_shard_rows();
  if (shards.empty()) {  // equal shards
    const Tensor shard = out.get(full, full.rows / groups_.size(GroupKind::ATTN_CP));
    rows::cp_take_back(groups_, full, shard);
    return shard;
  }
  const Tensor shard = out.get(full, shards[static_cast<size_t>(groups_.rank_in(GroupKind::ATTN_CP))]);
  rows::cp_take_back_padded(groups_, full, shards, shard);
  return shard;
}

Tensor StageRunner::move_residual(ResidualMove move, const Tensor& residual) {
  // Through the update's shard operations: a plain add's residual is rows, so a slice is a view
  // (the update then writes this rank's rows in place) and a gather a copy.
  switch (move) {
    case ResidualMove::NONE: return residual;
    case ResidualMove::ATTN_TP_SLICE: return rows::token_slice(groups_, GroupKind::ATTN_TP, residual);
    case ResidualMove::ATTN_TP_GATHER: {
      const Tensor full = residual_.get(residual, residual.rows * groups_.size(GroupKind::ATTN_TP));
      rows::attn_tp_gather(groups_, residual, full).wait();
      return full;
    }
  }
  return residual;
}

residual::StageInput StageRunner::move_input(InputMove move, const residual::StageInput& input, const BatchFacts& facts) {
  if (move == InputMove::NONE) return input;
  // Gathers whole rows: a quantised input moves its values and its per-token scales alike.
  const std::span<const int64_t> shards = facts.cp_shard_rows();
  auto gather = [&](const Tensor& in, rows::Scratch& out) {
    if (move == InputMove::ATTN_TP_GATHER) {
      const Tensor full = out.get(in, in.rows * groups_.size(GroupKind::ATTN_TP));
      rows::attn_tp_gather(groups_, in, full).wait();
      return full;
    }
    // CP: equal shards concatenate; uneven ones are padded to the longest first (block r at r * max).
    const int64_t block = shards.empty() ? in.rows : *std::max_element(shards.begin(), shards.end());
    const Tensor full = out.get(in, block * groups_.size(GroupKind::ATTN_CP));
    if (shards.empty())
      rows::cp_gather(groups_, in, full);
    else
      rows::cp_gather_padded(groups_, in, shards, full, scratch_);
    return full;
  };
  const Tensor values = gather(input.values, gathered_);
  if (!input.quantized()) return {values};
  const Tensor scales =
      Tensor::contiguous(const_cast<float*>(input.scales), DType::f32, input.values.rows, 1, input.values.device);
  return {values, static_cast<const float*>(gather(scales, gathered_scales_).data)};
}

}  // namespace seam::boundary
