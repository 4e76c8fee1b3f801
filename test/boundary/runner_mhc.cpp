// MHC stacks through StageRunner (see runner_harness.h).
#include <cstdint>
#include "kernels/norm/elementwise.h"
#include "runtime/boundary/factories.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/mhc.h"
#include "test/boundary/runner_harness.h"

namespace seam::boundary::runner_test {

// MHC hyper-connections (nonlinear attention update, FFN update written at the producer): two
// AF layers through the runners, against the same MhcLayer operations applied by one local stream
// on the replica's whole rows (no boundary, no collective).
void run_mhc(const std::shared_ptr<comm::Communicator>& world, int attn_dp, ReductionPolicy policy, PaddingMode padding,
             bool input_scattered, int dense_tp) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = Topology::make(tp, attn_dp);
  if (ctx.topology.attn_tp == 1 && attn_dp > 1) {
    ctx.topology.moe_ep = attn_dp;
    ctx.topology.moe_tp = tp / attn_dp;
  }
  ctx.topology.attn_tp_input_scattered = input_scattered;
  ctx.topology.moe_dense_tp = dense_tp;
  ctx.topology.validate();
  ctx.policy = policy;
  rows::ProcessGroups groups(world, ctx.topology);
  const Ones ones_weight;
  const Tensor& ones = ones_weight.tensor;
  const residual::MhcCoefficients attn_c{{0.6f, 0.4f}, {0.9f, 0.1f, 0.2f, 0.8f}, {0.5f, 0.5f}};
  const residual::MhcCoefficients ffn_c{{0.3f, 0.7f}, {0.7f, 0.3f, 0.4f, 0.6f}, {0.25f, 0.75f}};
  // One set of layers for the runners, another for the reference (the layers carry per-forward state).
  std::vector<std::unique_ptr<residual::MhcLayer>> layers, ref_layers;
  for (int l = 0; l < 2; ++l) {
    layers.push_back(std::make_unique<residual::MhcLayer>(2, attn_c, ffn_c, l == 1));
    ref_layers.push_back(std::make_unique<residual::MhcLayer>(2, attn_c, ffn_c, l == 1));
  }
  std::vector<std::unique_ptr<residual::RmsNorm>> norms;
  for (int i = 0; i < 9; ++i) norms.push_back(std::make_unique<residual::RmsNorm>(ones, 1e-6f));

  std::vector<StageSpec> specs;
  for (int l = 0; l < 2; ++l) {
    specs.push_back({declare_attn({.read = MHC_READ, .update = MHC_ATTENTION_UPDATE}), norms[2 * l].get()});
    specs.push_back({declare_ffn({.read = MHC_READ, .update = MHC_FFN_UPDATE}), norms[2 * l + 1].get()});
  }
  const auto stages = make_stages(ctx, specs, {.terminal = true});
  std::vector<std::unique_ptr<StageRunner>> runners;
  for (size_t i = 0; i < stages.size(); ++i) {
    const residual::LayerResidual ops = layers[i / 2]->residual();
    const bool attention = i % 2 == 0;
    runners.push_back(std::make_unique<StageRunner>(stages[i], groups, *norms[i], attention ? *ops.attention_read : *ops.ffn_read,
                                                    attention ? *ops.attention_update : *ops.ffn_update));
  }

  const int dp = groups.attn().dp;
  std::vector<int64_t> tokens;
  for (int d = 0; d < attn_dp; ++d) tokens.push_back(d == 1 ? 0 : 2 + 3 * d);
  residual::ForwardBatch batch;
  const BatchVariant variant = input_scattered ? BatchVariant::INPUT_SCATTERED : BatchVariant::ORDINARY;
  batch.facts = BatchFacts::make(tokens, dp, ctx.topology.attn_tp, padding, variant);
  const int64_t local_rows = batch.facts.local_rows();
  // An input-scattered batch starts from the vocab-parallel embedding's TP partial.
  const float embed_weight = input_scattered ? weight(tp, groups.tp_rank()) : 1.f;
  Buffer embed_storage(static_cast<size_t>(local_rows * kHidden) * 4 + 4), ref_storage(embed_storage.bytes());
  const Tensor embed = embed_storage.as_tensor(DType::f32, local_rows, kHidden);
  const Tensor ref_embed = ref_storage.as_tensor(DType::f32, local_rows, kHidden);
  for (int64_t i = 0; i < local_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c) {
      const float v = i < tokens[dp] ? embedding(dp, i, c) : 0.f;
      static_cast<float*>(ref_embed.row(i))[c] = v;
      static_cast<float*>(embed.row(i))[c] = embed_weight * v;
    }

  std::vector<Buffer> storage;
  auto compute = [&](const Tensor& in, float scale, const rows::GroupKind* partial_over) {
    storage.emplace_back(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
    const Tensor out = storage.back().as_tensor(DType::f32, in.rows, kHidden);
    const float w = scale * (partial_over ? weight(groups.size(*partial_over), groups.rank_in(*partial_over)) : 1.f);
    for (int64_t i = 0; i < in.rows; ++i)
      for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(out.row(i))[c] = w * static_cast<const float*>(in.row(i))[c];
    return out;
  };

  residual::start(batch);
  residual::LayerOutput h(embed);
  const rows::GroupKind attn_tp = rows::GroupKind::ATTN_TP, full_tp = rows::GroupKind::TP;
  for (size_t s = 0; s < stages.size(); s += 2) {
    Tensor attn_in = runners[s]->prepare(h, batch).values;
    // An input-scattered attention gathers its sliced input itself.
    if (attn_in.rows < local_rows) {
      storage.emplace_back(static_cast<size_t>(local_rows * kHidden) * 4 + 4);
      const Tensor full = storage.back().as_tensor(DType::f32, local_rows, kHidden);
      rows::all_gather(groups, attn_tp, attn_in, full).wait();
      attn_in = full;
    }
    h = runners[s]->finish(compute(attn_in, 3.f, &attn_tp), batch);
    const Tensor in = runners[s + 1]->prepare(h, batch).values;
    StageRunner::Exit exit = runners[s + 1]->exit(batch);
    // A dense FFN on local rows returns complete rows.
    const bool partial = stages[s + 1].plan().path(variant).stage.output.group.has_value();
    const Tensor out = compute(in, 2.f, partial ? &full_tp : nullptr);
    if (partial && !exit.flags().compute_skips_sum()) rows::all_reduce(groups, full_tp, out).wait();
    h = exit.finish(out);
  }
  const Tensor result = residual::norm(h, batch, *norms[4]);

  // The reference: the same operations on one local stream over this replica's rows.
  residual::ForwardBatch ref;
  residual::start(ref);
  residual::LayerOutput r(ref_embed);
  for (int l = 0; l < 2; ++l) {
    const residual::LayerResidual ops = ref_layers[l]->residual();
    const Tensor a = compute(residual::read_input(r, ref, *ops.attention_read, *norms[5 + 2 * l]).values, 3.f, nullptr);
    r = residual::current(ref).leave(residual::ProducerOutput::complete_tensor(a), *ops.attention_update);
    const Tensor f = compute(residual::read_input(r, ref, *ops.ffn_read, *norms[6 + 2 * l]).values, 2.f, nullptr);
    r = residual::write_at_producer(ref, f, *ops.ffn_update);
  }
  const Tensor expected = residual::norm(r, ref, *norms[8]);
  for (int64_t i = 0; i < tokens[dp]; ++i)
    for (int64_t c = 0; c < kHidden; ++c)
      if (!close(static_cast<const float*>(result.row(i))[c], static_cast<const float*>(expected.row(i))[c]))
        fail("mhc attn_dp=" + std::to_string(attn_dp) + " policy=" + std::string(policy_name(policy)) +
             (input_scattered ? " input-scattered" : "") + " dense_tp=" + std::to_string(dense_tp) + ": token " +
             std::to_string(i) + " col " + std::to_string(c));
}

}  // namespace seam::boundary::runner_test
