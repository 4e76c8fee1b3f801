#include "tools/sim/driver.h"

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "layouts/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
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

ForwardOutput run_forward(const Model& model, SimStack& stack, std::vector<std::unique_ptr<boundary::StageRunner>>& runners,
                          ProcessGroups& groups, boundary::rows::PipelineHandoff& handoff, residual::ForwardBatch& batch,
                          bool capture) {
  auto runner = [&](int64_t i) -> boundary::StageRunner& { return *runners[static_cast<size_t>(i - stack.begin())]; };
  const Topology& topology = groups.topology();
  auto path = [&](int64_t i) -> const boundary::BoundPath& { return stack.stage(i).plan().path(batch.facts.variant()); };

  ForwardOutput result;
  residual::OwnedTensor input;  // the embeddings, on the partition that starts the stack
  residual::LayerOutput h;
  if (stack.begin() == 0) {
    const auto ids = token_ids(batch.facts, path(0).incoming.produced.layout, topology, groups.attn());
    input = embeddings(model, batch.facts, ids, topology.tp);
    residual::start(batch);
    h = residual::LayerOutput(input.view);
  } else {
    h = runner(stack.begin()).from_pp(handoff.receive(), batch, residual::add_update());
  }

  // Each stage's output storage lives until the next boundary has consumed it (the whole forward).
  std::vector<residual::OwnedTensor> outputs, gathered;
  outputs.reserve(static_cast<size_t>(stack.end() - stack.begin()));
  gathered.reserve(static_cast<size_t>(stack.end() - stack.begin()));
  for (int64_t i = stack.begin(); i < stack.end(); ++i) {
    boundary::StageBoundary& stage = stack.stage(i);
    const char kind = model.kind(i);
    const boundary::ResolvedStage& resolved = path(i).stage;
    // A capture may borrow storage the boundary reuses: keep a copy.
    auto keep_capture = [&](const Tensor& value, bool /*owned*/) {
      result.captures.push_back({i, residual::OwnedTensor::clone(value),
                                 token_ids(batch.facts, path(i).incoming.produced.layout, topology, groups.attn())});
    };
    const bool captures = capture && stage.kind() == boundary::StageKind::ATTENTION;
    Tensor in = captures ? runner(i).prepare(h, batch, boundary::PrepareOptions{.capture_output = keep_capture}).values
                         : runner(i).prepare(h, batch).values;
    if (gathers_input_itself(resolved)) {
      // Attention gathers its sliced input itself (as its QKV projection would).
      gathered.push_back(residual::OwnedTensor::zeros(in.dtype, in.rows * topology.attn_tp, in.cols));
      boundary::rows::attn_tp_gather(groups, in, gathered.back().view).wait();
      in = gathered.back().view;
    }
    const Share share = share_of(kind, groups);
    const std::vector<int64_t> ids = token_ids(batch.facts, resolved.input.layout, topology, groups.attn());
    outputs.push_back(residual::OwnedTensor::zeros(in.dtype, in.rows, in.cols));
    const Tensor out = outputs.back().view;
    if (stage.plan().finishes_directly()) {
      model.compute(i, in, ids, share.shard, out);
      h = runner(i).finish(out, batch);
      continue;
    }
    auto exit = runner(i).exit(batch);
    model.compute(i, in, ids, share.shard, out);
    // Compute completes its own sum unless the exit told it the boundary completes or carries it.
    if (share.group && !exit.flags().compute_skips_sum()) boundary::rows::all_reduce(groups, *share.group, out).wait();
    h = exit.finish(out);
  }


  if (!stack.terminal()) {
    // to_pp keeps a declared partial raw for the receiver (and completes anything else).
    const residual::Contribution* pending = residual::current(batch).pending();
    const bool declared_partial = pending && pending->owed == residual::Owed::declared_sum;
    const residual::PpTensors pp = residual::to_pp(h, batch);
    handoff.send({pp.hidden_states, pp.residual, pp.has_residual, declared_partial});
    return result;
  }
  auto keep_residual = [&](const Tensor& value, bool /*owned*/) { result.residual = residual::OwnedTensor::clone(value); };
  const Tensor normed = residual::norm(h, batch, stack.final_norm(), {.capture = keep_residual});
  result.output = residual::OwnedTensor::clone(normed);
  result.token_ids = token_ids(batch.facts, path(stack.end() - 1).stage.handed_on, topology, groups.attn());
  result.has_output = true;
  return result;
}

}  // namespace seam::sim
