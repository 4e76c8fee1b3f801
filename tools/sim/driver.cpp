#include "tools/sim/driver.h"

#include <memory>
#include <optional>
#include <vector>

#include "layouts/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"
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
    case 'E': return {{t.moe_coords(g.tp_rank()).ep, t.moe_ep}, GroupKind::MOE_OUTPUT};
    default: return {{g.attn().tp, t.attn_tp}, GroupKind::ATTN_TP};
  }
}

// This replica's embeddings on its padded local rows (padding rows zero).
residual::OwnedTensor embeddings(const Model& model, const BatchFacts& facts) {
  residual::OwnedTensor e = residual::OwnedTensor::zeros(model.config().dtype, facts.local_rows(), model.config().hidden);
  const int64_t first = first_token(facts, facts.dp_rank());
  for (int64_t i = 0; i < facts.tokens(facts.dp_rank()); ++i) model.embed(first + i, e.view, i);
  return e;
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
                          ProcessGroups& groups, boundary::rows::PipelineHandoff& handoff, residual::ForwardBatch& batch) {
  auto runner = [&](int64_t i) -> boundary::StageRunner& { return *runners[static_cast<size_t>(i - stack.begin())]; };

  residual::OwnedTensor input;  // the embeddings, on the partition that starts the stack
  residual::LayerOutput h;
  if (stack.begin() == 0) {
    input = embeddings(model, batch.facts);
    residual::start(batch);
    h = residual::LayerOutput(input.view);
  } else {
    h = runner(stack.begin()).from_pp(handoff.receive(), batch, residual::add_update());
  }

  // Each stage's output storage lives until the next boundary has consumed it (the whole forward).
  std::vector<residual::OwnedTensor> outputs;
  outputs.reserve(static_cast<size_t>(stack.end() - stack.begin()));
  for (int64_t i = stack.begin(); i < stack.end(); ++i) {
    boundary::StageBoundary& stage = stack.stage(i);
    const char kind = model.kind(i);
    const residual::StageInput in = runner(i).prepare(h, batch);
    const Share share = share_of(kind, groups);
    const std::vector<int64_t> ids = token_ids(batch.facts, stage.plan().path(batch.facts.variant()).stage.input.layout,
                                               groups.attn().tp, groups.topology().attn_tp);
    outputs.push_back(residual::OwnedTensor::zeros(in.values.dtype, in.values.rows, in.values.cols));
    const Tensor out = outputs.back().view;
    if (stage.plan().finishes_directly()) {
      model.compute(i, in.values, ids, share.shard, out);
      h = runner(i).finish(out, batch);
      continue;
    }
    auto exit = runner(i).exit(batch);
    model.compute(i, in.values, ids, share.shard, out);
    // Compute completes its own sum unless the exit told it the boundary completes or carries it.
    if (share.group && !exit.flags().compute_skips_sum()) boundary::rows::all_reduce(groups, *share.group, out).wait();
    h = exit.finish(out);
  }

  ForwardOutput result;
  if (!stack.terminal()) {
    const residual::PpTensors pp = residual::to_pp(h, batch);
    handoff.send({pp.hidden_states, pp.residual, pp.has_residual});
    return result;
  }
  auto keep_residual = [&](const Tensor& value, bool /*owned*/) { result.residual = residual::OwnedTensor::clone(value); };
  const Tensor normed = residual::norm(h, batch, stack.final_norm(), {.capture = keep_residual});
  result.output = residual::OwnedTensor::clone(normed);
  result.has_output = true;
  return result;
}

}  // namespace seam::sim
