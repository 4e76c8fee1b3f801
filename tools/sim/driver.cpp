#include <cstdint>
#include "tools/sim/driver.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <vector>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/microbatch.h"
#include "tools/sim/token_rows.h"

namespace seam::sim {

using boundary::rows::GroupKind;
using boundary::rows::ProcessGroups;

StageShards stage_shards(const Topology& t) {
  StageShards s;
  s.attention = {0, t.attn_tp};
  s.dense = t.dense_ffn_fully_dp() ? Shard{0, 1} : Shard{0, t.tp};
  s.experts = {0, t.moe_ep, 0, t.moe_tp};
  return s;
}

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

Runners bind_runners(SimStack& stack, ProcessGroups& groups) {
  Runners runners;
  for (int64_t i = stack.begin(); i < stack.end(); ++i) {
    const boundary::StageBoundary& stage = stack.stage(i);
    runners.push_back(std::make_unique<boundary::StageRunner>(stage, groups, stack.norm(i), read_of(stage.declaration()),
                                                              residual::add_update()));
  }
  return runners;
}

namespace {

// One microbatch's place in the stack (or the whole batch's): its batch, the value its next boundary
// takes, the global token of each of its rows, and the stage runners that serve its stream.
struct Lane {
  residual::ForwardBatch* batch;
  residual::LayerOutput h;
  const ReplicaRows* rows;
  Runners* runners;
};

// Runs stages on lanes; owns the storage each stage's output (and a self-gathered input) lives in
// until the next boundary has consumed it — the whole forward.
class StackRun {
 public:
  StackRun(const Model& model, SimStack& stack, ProcessGroups& groups, bool capture, Device device, Fault fault,
           ForwardOutput& result)
      : model_(model), stack_(stack), groups_(groups), capture_(capture), device_(device), fault_(fault),
        result_(result) {}

  const boundary::BoundPath& path(int64_t i, const Lane& lane) const {
    return stack_.stage(i).plan().path(lane.batch->facts.variant());
  }
  std::vector<int64_t> ids(const Lane& lane, Layout layout) const {
    return token_ids(lane.batch->facts, *lane.rows, layout, groups_.topology(), groups_.attn());
  }

  /// prepare -> compute -> finish (PARTIAL attention) or exit scope -> compute -> finish.
  void stage(int64_t i, Lane& lane) {
    boundary::StageRunner& runner = *(*lane.runners)[static_cast<size_t>(i - stack_.begin())];
    residual::ForwardBatch& batch = *lane.batch;
    const boundary::ResolvedStage& resolved = path(i, lane).stage;
    // A capture may borrow storage the boundary reuses: keep a copy.
    auto keep_capture = [&](const Tensor& value, bool /*owned*/) {
      result_.captures.push_back(
          {i, residual::OwnedTensor::clone(value, Device::cpu()), ids(lane, path(i, lane).incoming.produced.layout)});
    };
    const bool captures = capture_ && stack_.stage(i).kind() == boundary::StageKind::ATTENTION;
    Tensor in = captures ? runner.prepare(lane.h, batch, boundary::PrepareOptions{.capture_output = keep_capture}).values
                         : runner.prepare(lane.h, batch).values;
    if (gathers_input_itself(resolved)) {
      // Attention gathers its sliced input itself (as its QKV projection would).
      const Tensor full =
          keep(residual::OwnedTensor::zeros(in.dtype, in.rows * groups_.topology().attn_tp, in.cols, device_));
      boundary::rows::attn_tp_gather(groups_, in, full).wait();
      in = full;
    }
    const Share share = share_of(model_.kind(i), groups_);
    const std::vector<int64_t> token_ids = ids(lane, resolved.input.layout);
    const Tensor out = keep(residual::OwnedTensor::zeros(in.dtype, in.rows, in.cols, device_));
    if (stack_.stage(i).plan().finishes_directly()) {
      compute(i, in, token_ids, share.shard, out);
      lane.h = runner.finish(out, batch);
      return;
    }
    auto exit = runner.exit(batch);
    compute(i, in, token_ids, share.shard, out);
    // Compute completes its own sum unless the exit told it the boundary completes or carries it.
    if (share.group && !exit.flags().compute_skips_sum()) boundary::rows::all_reduce(groups_, *share.group, out).wait();
    lane.h = exit.finish(out);
  }

 private:
  // The model computes on host: device rows cross over and back.
  void compute(int64_t i, const Tensor& in, std::span<const int64_t> token_ids, Shard shard, const Tensor& out) {
    if (!device_.is_cuda()) {
      model_.compute(i, in, token_ids, shard, out);
      corrupt(i, shard, out);
      return;
    }
    const residual::OwnedTensor host_in = residual::OwnedTensor::clone(in, Device::cpu());
    const residual::OwnedTensor host_out = residual::OwnedTensor::zeros(out.dtype, out.rows, out.cols);
    model_.compute(i, host_in.view, token_ids, shard, host_out.view);
    corrupt(i, shard, host_out.view);
    kernels::copy(host_out.view, out);
  }

  // The injected fault (ForwardOptions::fault), on host rows.
  void corrupt(int64_t i, Shard shard, const Tensor& partial) {
    if (fault_ == Fault::none || shard.count * shard.inner_count == 1) return;
    if (faulty_stage_ < 0) faulty_stage_ = i;
    if (i != faulty_stage_ || shard.index != shard.count - 1 || shard.inner != shard.inner_count - 1) return;
    const float factor = fault_ == Fault::scale ? 1.01f : fault_ == Fault::drop ? 0.0f : 2.0f;
    for (int64_t r = 0; r < partial.rows; ++r)
      for (int64_t c = 0; c < partial.cols; ++c) store(partial, r, c, load(partial, r, c) * factor);
  }

  Tensor keep(residual::OwnedTensor t) {
    storage_.push_back(std::move(t));
    return storage_.back().view;
  }

  const Model& model_;
  SimStack& stack_;
  ProcessGroups& groups_;
  bool capture_;
  Device device_;
  Fault fault_;
  int64_t faulty_stage_ = -1;
  ForwardOutput& result_;
  std::deque<residual::OwnedTensor> storage_;  ///< a deque: views stay valid as it grows
};

// The two microbatches of a batch (§4.5: split by token range). Each replica splits its own rows: the
// first microbatch takes the first ceil(rows/2) rows rounded up to the row multiple (attn_tp x
// attn_cp, as the batch's), the second the rest. On a CP batch every rank splits the shard it holds
// alike, so each microbatch is again a CP batch of equal shards (its shard k = the first / last part
// of the parent's shard k). A microbatch's facts count its real tokens per replica, with the
// parent's padding mode and variant; `rows` names the parent's token in each of its rows.
struct MicrobatchSplit {
  residual::ForwardBatch batches[2];
  ReplicaRows rows[2];
  int64_t local_rows[2];  ///< this rank's rows of each at the split: its attention rows
};
void split_batch(const BatchFacts& facts, const ReplicaRows& parent, const Topology& t, MicrobatchSplit& split) {
  const int64_t multiple = static_cast<int64_t>(t.attn_tp) * t.attn_cp;
  const int64_t cp = facts.variant() == BatchVariant::CONTEXT_PARALLEL ? t.attn_cp : 1;
  std::vector<int64_t> tokens[2], rows[2];
  for (int d = 0; d < facts.dp_size(); ++d) {
    const int64_t total = facts.rows(d);
    const int64_t first = ((total + 1) / 2 + multiple - 1) / multiple * multiple;
    const int64_t part_rows[2] = {first, total - first};
    const int64_t shard = total / cp;
    for (int m = 0; m < 2; ++m) {
      const int64_t part_shard = part_rows[m] / cp;
      std::vector<int64_t> ids;
      int64_t real = 0;
      for (int64_t j = 0; j < part_rows[m]; ++j) {
        const int64_t parent_row = j / part_shard * shard + (m == 1 ? first / cp : 0) + j % part_shard;
        ids.push_back(parent[static_cast<size_t>(d)][static_cast<size_t>(parent_row)]);
        if (ids.back() >= 0 && real++ != j) throw std::logic_error("a microbatch's padding precedes a token");
      }
      tokens[m].push_back(real);
      rows[m].push_back(part_rows[m]);
      split.rows[m].push_back(std::move(ids));
    }
  }
  for (int m = 0; m < 2; ++m) {
    split.batches[m].facts = BatchFacts::make(tokens[m], facts.dp_rank(), static_cast<int>(multiple), facts.padding(),
                                              facts.variant());
    for (int d = 0; d < facts.dp_size(); ++d)
      if (split.batches[m].facts.rows(d) != rows[m][static_cast<size_t>(d)])
        throw std::logic_error("a microbatch's facts pad its rows differently from the split");
    split.local_rows[m] = rows[m][static_cast<size_t>(facts.dp_rank())] / cp;
  }
}

}  // namespace

TboSplit tbo_split(SimStack& stack, const Topology& topology, BatchVariant variant) {
  const int64_t first = stack.after_tbo_split();
  std::string after = first ? " (after " + stack.label(first - 1) + "'s TBO_SPLIT handoff)" : "";
  TboSplit split;
  split.stage = std::max(first, stack.begin());
  if (split.stage >= stack.end()) {
    split.description = "tbo: whole batch (the split is in a later partition)";
    return split;
  }
  if (split.stage > first) after = "";  // the split falls before this partition: its input splits
  const boundary::RowLayouts rows = boundary::row_layouts(topology, variant);
  const boundary::EdgeDecl& in = stack.stage(split.stage).plan().path(variant).incoming;
  split.move = boundary::tbo_split_move(topology, variant, in.produced.layout);
  const std::string label = stack.label(split.stage);
  if (split.move != boundary::TboSplitMove::KEEP || in.residual != rows.attention)
    throw NotSupportedError("--microbatches 2: the simulator splits attention rows only, and " + label + "'s input is " +
                            describe(in));
  const int64_t last = stack.end() - 1;
  const boundary::BoundPath& out = stack.stage(last).plan().path(variant);
  const bool written = out.output_move.kind == boundary::OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER ||
                       (out.output_move.kind == boundary::OutputMoveKind::OUTPUT_ON_RESIDUAL_SHARD &&
                        out.output_move.gathers_back);
  if (out.stage.handed_on != rows.attention || (!written && out.stage.residual != rows.attention))
    throw NotSupportedError("--microbatches 2: the simulator merges attention rows only, and " +
                            stack.label(last) + " hands on " + out.stage.handed_on.to_string() +
                            " with the residual on " + out.stage.residual.to_string());
  split.description = "tbo: split before " + label + after + ": layer input " + in.produced.layout.to_string() +
                      " -> keep; merge after " + stack.label(last);
  return split;
}

ForwardOutput run_forward(const Model& model, SimStack& stack, std::span<Runners> runners, ProcessGroups& groups,
                          boundary::rows::PipelineHandoff& handoff, residual::ForwardBatch& batch,
                          const ForwardOptions& options) {
  const Topology& topology = groups.topology();
  if (static_cast<int>(runners.size()) != options.microbatches)
    throw ValueError("run_forward needs one set of stage runners per microbatch");
  ForwardOutput result;
  StackRun run(model, stack, groups, options.capture, options.device, options.fault, result);
  const ReplicaRows whole_rows = replica_rows(batch.facts);
  Lane whole{&batch, {}, &whole_rows, &runners[0]};

  residual::OwnedTensor input;  // the embeddings, on the partition that starts the stack
  if (stack.begin() == 0) {
    input = embeddings(model, batch.facts, run.ids(whole, run.path(0, whole).incoming.produced.layout), topology.tp);
    if (options.device.is_cuda()) input = residual::OwnedTensor::clone(input.view, options.device);
    residual::start(batch);
    whole.h = residual::LayerOutput(input.view);
  } else {
    whole.h = runners[0].front()->from_pp(handoff.receive(), batch, residual::add_update());
  }

  // Two-batch overlap (§4.5): the stages before the split on the whole batch, then each microbatch
  // on its own stream and its own runners, stages interleaved, merged at the end.
  const int64_t split_at =
      options.microbatches == 1 ? stack.end() : tbo_split(stack, topology, batch.facts.variant()).stage;
  for (int64_t i = stack.begin(); i < split_at; ++i) run.stage(i, whole);
  residual::OwnedTensor merged_hidden, merged_residual;
  if (split_at < stack.end()) {
    MicrobatchSplit split;
    split_batch(batch.facts, whole_rows, topology, split);
    residual::ForwardBatch* child_ptrs[2] = {&split.batches[0], &split.batches[1]};
    residual::LayerOutput outputs[2];
    residual::split_microbatches(batch, whole.h, split.local_rows, child_ptrs, outputs);
    Lane lanes[2] = {{child_ptrs[0], std::move(outputs[0]), &split.rows[0], &runners[0]},
                     {child_ptrs[1], std::move(outputs[1]), &split.rows[1], &runners[1]}};
    for (int64_t i = split_at; i < stack.end(); ++i)
      for (Lane& lane : lanes) run.stage(i, lane);
    const int64_t rows = split.local_rows[0] + split.local_rows[1];
    merged_hidden = residual::OwnedTensor::zeros(model.config().dtype, rows, model.config().hidden, options.device);
    merged_residual = residual::OwnedTensor::zeros(model.config().dtype, rows, model.config().hidden, options.device);
    const residual::LayerOutput last[2] = {std::move(lanes[0].h), std::move(lanes[1].h)};
    whole.h = residual::merge_microbatches(batch, child_ptrs, last, merged_hidden.view, merged_residual.view);
  }

  if (!stack.terminal()) {
    // to_pp keeps a declared partial raw for the receiver (and completes anything else).
    const residual::PpTensors pp = residual::to_pp(whole.h, batch);
    handoff.send({pp.hidden_states, pp.residual, pp.has_residual, pp.declared_partial});
    return result;
  }
  auto keep_residual = [&](const Tensor& value, bool /*owned*/) {
    result.residual = residual::OwnedTensor::clone(value, Device::cpu());
  };
  const Tensor normed = residual::norm(whole.h, batch, stack.final_norm(), {.capture = keep_residual});
  result.output = residual::OwnedTensor::clone(normed, Device::cpu());
  result.token_ids = run.ids(whole, run.path(stack.end() - 1, whole).stage.handed_on);
  result.has_output = true;
  return result;
}

}  // namespace seam::sim
