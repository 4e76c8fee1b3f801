#include "tools/sim/driver.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "layouts/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/microbatch.h"
#include "tools/sim/token_rows.h"

namespace seam::sim {

using boundary::rows::GroupKind;
using boundary::rows::ProcessGroups;

namespace {

// The shard of stage `kind`'s work this rank computes, and the group its partial sums over (none:
// a fully data-parallel dense FFN computes complete outputs for its own rows).
struct Share {
  Shard shard;
  std::optional<GroupKind> group;
};
Share share_of(char kind, const ProcessGroups& g) {
  const Topology& t = g.topology();
  switch (kind) {
    case 'F': return t.dense_ffn_fully_dp() ? Share{{0, 1}, std::nullopt} : Share{{g.tp_rank(), t.tp}, GroupKind::TP};
    case 'E': {
      const Topology::MoeCoords m = t.moe_coords(g.tp_rank());
      return {{m.ep, t.moe_ep, m.tp, t.moe_tp}, GroupKind::MOE_OUTPUT};
    }
    default: return {{g.attn().tp, t.attn_tp}, GroupKind::ATTN_TP};
  }
}

// The stack's input on the rows the first stage receives (`ids`, padding rows zero). On an
// input-scattered batch the embedding is vocab-parallel: each TP rank holds a 1/tp share (exact for
// a power of two) and the first boundary completes the TP sum.
residual::OwnedTensor embeddings(const Model& model, const BatchFacts& facts, std::span<const int64_t> ids, int tp) {
  residual::OwnedTensor e = residual::OwnedTensor::zeros(model.config().dtype, static_cast<int64_t>(ids.size()),
                                                         model.config().hidden);
  const float share = facts.variant() == BatchVariant::INPUT_SCATTERED ? 1.0f / static_cast<float>(tp) : 1.0f;
  for (int64_t r = 0; r < e.view.rows; ++r) {
    if (ids[static_cast<size_t>(r)] < 0) continue;
    model.embed(ids[static_cast<size_t>(r)], e.view, r);
    for (int64_t c = 0; c < e.view.cols; ++c) store(e.view, r, c, load(e.view, r, c) * share);
  }
  return e;
}

// Whether the boundary hands this stage its input on attention-TP slices for compute to gather
// itself: the entry's input rows are need ∪ (residual rows ∩ what compute gathers itself).
bool gathers_input_itself(const boundary::ResolvedStage& stage) {
  const Layout rows = stage.input.layout | (stage.residual & stage.input.gathers_itself);
  return rows.has(TokenAxis::ATTN_TP_SCATTER) && !stage.input.layout.has(TokenAxis::ATTN_TP_SCATTER);
}

const residual::StageRead& read_of(const boundary::StageDeclaration& d) {
  if (d.read == boundary::NORM_READ) return residual::norm_read();
  if (d.read == boundary::NORM_QUANT_READ) return residual::norm_quant_read();
  throw NotSupportedError("the simulator's stages read with NORM_READ or NORM_QUANT_READ, not " + std::string(d.read.name));
}

}  // namespace

std::vector<std::unique_ptr<boundary::StageRunner>> bind_runners(SimStack& stack, ProcessGroups& groups) {
  std::vector<std::unique_ptr<boundary::StageRunner>> runners;
  for (int64_t i = stack.begin(); i < stack.end(); ++i) {
    const boundary::StageBoundary& stage = stack.stage(i);
    runners.push_back(std::make_unique<boundary::StageRunner>(stage, groups, stack.norm(i), read_of(stage.declaration()),
                                                              residual::add_update()));
  }
  return runners;
}

namespace {

// One microbatch's place in the stack: its batch, the value its next boundary takes, and the global
// id of its first token (its batch facts count tokens from zero).
struct Lane {
  residual::ForwardBatch* batch;
  residual::LayerOutput h;
  int64_t token_base = 0;
};

// Runs stages on lanes; owns the storage each stage's output (and a self-gathered input) lives in
// until the next boundary has consumed it — the whole forward.
class StackRun {
 public:
  StackRun(const Model& model, SimStack& stack, std::vector<std::unique_ptr<boundary::StageRunner>>& runners,
           ProcessGroups& groups, bool capture, ForwardOutput& result)
      : model_(model), stack_(stack), runners_(runners), groups_(groups), capture_(capture), result_(result) {}

  const boundary::BoundPath& path(int64_t i, const Lane& lane) const {
    return stack_.stage(i).plan().path(lane.batch->facts.variant());
  }
  std::vector<int64_t> ids(const Lane& lane, Layout layout) const {
    std::vector<int64_t> ids = token_ids(lane.batch->facts, layout, groups_.topology(), groups_.attn());
    for (int64_t& id : ids)
      if (id >= 0) id += lane.token_base;
    return ids;
  }

  /// prepare -> compute -> finish (PARTIAL attention) or exit scope -> compute -> finish.
  void stage(int64_t i, Lane& lane) {
    boundary::StageRunner& runner = *runners_[static_cast<size_t>(i - stack_.begin())];
    residual::ForwardBatch& batch = *lane.batch;
    const boundary::ResolvedStage& resolved = path(i, lane).stage;
    // A capture may borrow storage the boundary reuses: keep a copy.
    auto keep_capture = [&](const Tensor& value, bool /*owned*/) {
      result_.captures.push_back({i, residual::OwnedTensor::clone(value), ids(lane, path(i, lane).incoming.produced.layout)});
    };
    const bool captures = capture_ && stack_.stage(i).kind() == boundary::StageKind::ATTENTION;
    Tensor in = captures ? runner.prepare(lane.h, batch, boundary::PrepareOptions{.capture_output = keep_capture}).values
                         : runner.prepare(lane.h, batch).values;
    if (gathers_input_itself(resolved)) {
      // Attention gathers its sliced input itself (as its QKV projection would).
      const Tensor full = keep(residual::OwnedTensor::zeros(in.dtype, in.rows * groups_.topology().attn_tp, in.cols));
      boundary::rows::attn_tp_gather(groups_, in, full).wait();
      in = full;
    }
    const Share share = share_of(model_.kind(i), groups_);
    const std::vector<int64_t> token_ids = ids(lane, resolved.input.layout);
    const Tensor out = keep(residual::OwnedTensor::zeros(in.dtype, in.rows, in.cols));
    if (stack_.stage(i).plan().finishes_directly()) {
      model_.compute(i, in, token_ids, share.shard, out);
      lane.h = runner.finish(out, batch);
      return;
    }
    auto exit = runner.exit(batch);
    model_.compute(i, in, token_ids, share.shard, out);
    // Compute completes its own sum unless the exit told it the boundary completes or carries it.
    if (share.group && !exit.flags().compute_skips_sum()) boundary::rows::all_reduce(groups_, *share.group, out).wait();
    lane.h = exit.finish(out);
  }

 private:
  Tensor keep(residual::OwnedTensor t) {
    storage_.push_back(std::move(t));
    return storage_.back().view;
  }

  const Model& model_;
  SimStack& stack_;
  std::vector<std::unique_ptr<boundary::StageRunner>>& runners_;
  ProcessGroups& groups_;
  bool capture_;
  ForwardOutput& result_;
  std::deque<residual::OwnedTensor> storage_;  ///< a deque: views stay valid as it grows
};

// The two microbatches of a batch: the first takes half the rows (a multiple of attn_tp), the second
// the rest; each has its own batch facts, counting its tokens from zero.
struct MicrobatchSplit {
  residual::ForwardBatch batches[2];
  int64_t rows[2];
  int64_t first_token[2];
};
void split_batch(const BatchFacts& facts, int attn_tp, MicrobatchSplit& split) {
  const int64_t total_rows = facts.local_rows(), tokens = facts.tokens(0);
  const int64_t first_rows = (total_rows / 2 + attn_tp - 1) / attn_tp * attn_tp;
  const int64_t first_count = std::min(tokens, first_rows);
  const int64_t counts[2] = {first_count, tokens - first_count};
  for (int m = 0; m < 2; ++m)
    split.batches[m].facts = BatchFacts::make(std::vector<int64_t>{counts[m]}, 0, attn_tp, facts.padding(), facts.variant());
  split.rows[0] = first_rows;
  split.rows[1] = total_rows - first_rows;
  split.first_token[0] = 0;
  split.first_token[1] = first_count;
}

}  // namespace

ForwardOutput run_forward(const Model& model, SimStack& stack, std::vector<std::unique_ptr<boundary::StageRunner>>& runners,
                          ProcessGroups& groups, boundary::rows::PipelineHandoff& handoff, residual::ForwardBatch& batch,
                          const ForwardOptions& options) {
  const Topology& topology = groups.topology();
  ForwardOutput result;
  StackRun run(model, stack, runners, groups, options.capture, result);
  Lane whole{&batch, {}, 0};

  residual::OwnedTensor input;  // the embeddings, on the partition that starts the stack
  if (stack.begin() == 0) {
    input = embeddings(model, batch.facts, run.ids(whole, run.path(0, whole).incoming.produced.layout), topology.tp);
    residual::start(batch);
    whole.h = residual::LayerOutput(input.view);
  } else {
    whole.h = runners.front()->from_pp(handoff.receive(), batch, residual::add_update());
  }

  // Two-batch overlap (§4.5): each microbatch on its own stream, stages interleaved, merged at the end.
  residual::OwnedTensor merged_hidden, merged_residual;
  if (options.microbatches == 1) {
    for (int64_t i = stack.begin(); i < stack.end(); ++i) run.stage(i, whole);
  } else {
    MicrobatchSplit split;
    split_batch(batch.facts, topology.attn_tp, split);
    residual::ForwardBatch* child_ptrs[2] = {&split.batches[0], &split.batches[1]};
    residual::LayerOutput outputs[2];
    residual::split_microbatches(batch, whole.h, split.rows, child_ptrs, outputs);
    Lane lanes[2] = {{child_ptrs[0], std::move(outputs[0]), split.first_token[0]},
                     {child_ptrs[1], std::move(outputs[1]), split.first_token[1]}};
    for (int64_t i = stack.begin(); i < stack.end(); ++i)
      for (Lane& lane : lanes) run.stage(i, lane);
    merged_hidden = residual::OwnedTensor::zeros(model.config().dtype, batch.facts.local_rows(), model.config().hidden);
    merged_residual = residual::OwnedTensor::zeros(model.config().dtype, batch.facts.local_rows(), model.config().hidden);
    const residual::LayerOutput last[2] = {std::move(lanes[0].h), std::move(lanes[1].h)};
    whole.h = residual::merge_microbatches(batch, child_ptrs, last, merged_hidden.view, merged_residual.view);
  }

  if (!stack.terminal()) {
    // to_pp keeps a declared partial raw for the receiver (and completes anything else).
    const residual::PpTensors pp = residual::to_pp(whole.h, batch);
    handoff.send({pp.hidden_states, pp.residual, pp.has_residual, pp.declared_partial});
    return result;
  }
  auto keep_residual = [&](const Tensor& value, bool /*owned*/) { result.residual = residual::OwnedTensor::clone(value); };
  const Tensor normed = residual::norm(whole.h, batch, stack.final_norm(), {.capture = keep_residual});
  result.output = residual::OwnedTensor::clone(normed);
  result.token_ids = run.ids(whole, run.path(stack.end() - 1, whole).stage.handed_on);
  result.has_output = true;
  return result;
}

}  // namespace seam::sim
