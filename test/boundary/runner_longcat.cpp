// LongCat's shortcut through StageRunner (see runner_harness.h).
#include "kernels/norm/elementwise.h"
#include "runtime/boundary/factories.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/add_norm.h"
#include "test/boundary/runner_harness.h"

namespace seam::boundary::runner_test {

// LongCat's shortcut: A, then a MoE whose already-read input also feeds a prepared branch of three
// stages (F, A, F); the MoE's complete output merges with the branch's last output, so the
// residual is added exactly once. Reference: r1 = emb + 3 n(emb); x = n(r1); moe = 1.5 x;
// r2 = r1 + 2 x; r3 = r2 + 3 n(r2); out = n(r3 + 2 n(r3) + moe).
void run_longcat(const std::shared_ptr<comm::Communicator>& world, int attn_dp) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = Topology::make(tp, attn_dp);
  ctx.policy = ReductionPolicy::RS_RSV;
  rows::ProcessGroups groups(world, ctx.topology);
  const Ones ones_weight;
  const Tensor& ones = ones_weight.tensor;
  residual::RmsNorm n0(ones, 1e-6f), n1(ones, 1e-6f), unused(ones, 1e-6f), n3(ones, 1e-6f), n4(ones, 1e-6f),
      final_norm(ones, 1e-6f);

  const auto trunk = make_stages(ctx, {{declare_attn({.read = NORM_READ}), &n0}, {declare_ffn({.sparse = true}), &n1}});
  const auto branch = make_stages(ctx, {{declare_ffn(), &unused}, {declare_attn({.read = NORM_READ}), &n3}, {declare_ffn(), &n4}},
                                  {.terminal = true, .prepared_from = trunk[1].declaration()});
  const residual::StageRead& read = residual::norm_read();
  const residual::StageUpdate& add = residual::add_update();
  StageRunner attention(trunk[0], groups, n0, read, add), experts(trunk[1], groups, n1, read, add);
  StageRunner first(branch[0], groups, unused, read, add), second(branch[1], groups, n3, read, add),
      third(branch[2], groups, n4, read, add);

  residual::ForwardBatch batch;
  const int dp = groups.attn().dp;
  std::vector<int64_t> tokens(attn_dp, 4);
  batch.facts = BatchFacts::make(tokens, dp, ctx.topology.attn_tp, PaddingMode::SUM_LEN);
  const int64_t local_rows = batch.facts.local_rows();
  Buffer embed_storage(static_cast<size_t>(local_rows * kHidden) * 4);
  const Tensor embed = embed_storage.as_tensor(DType::f32, local_rows, kHidden);
  for (int64_t i = 0; i < local_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(embed.row(i))[c] = embedding(dp, i, c);

  // Compute: scale times the input, a partial over `group` summed by compute unless skipped.
  std::vector<Buffer> storage;
  auto compute = [&](const Tensor& in, float scale, rows::GroupKind group, bool sum) {
    storage.emplace_back(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
    const Tensor out = storage.back().as_tensor(DType::f32, in.rows, kHidden);
    const float w = scale * weight(groups.size(group), groups.rank_in(group));
    for (int64_t i = 0; i < in.rows; ++i)
      for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(out.row(i))[c] = w * static_cast<const float*>(in.row(i))[c];
    if (sum) rows::all_reduce(groups, group, out).wait();
    return out;
  };

  residual::start(batch);
  residual::LayerOutput h(embed);
  h = attention.finish(compute(attention.prepare(h, batch).values, 3.f, rows::GroupKind::ATTN_TP, false), batch);
  const Tensor moe_input = experts.prepare(h, batch).values;
  // The MoE completes its own output (no exit scope) and places it on its handoff rows.
  const Tensor moe_out = experts.branch_output(compute(moe_input, 1.5f, rows::GroupKind::MOE_OUTPUT, true), batch);
  Buffer moe_keep(static_cast<size_t>(moe_out.rows * kHidden) * 4 + 4);
  const Tensor contribution = moe_keep.as_tensor(DType::f32, moe_out.rows, kHidden);
  kernels::copy(moe_out, contribution);

  const Tensor branch_in = first.branch_input(moe_input, batch);
  {
    StageRunner::Exit exit = first.exit(batch);
    h = exit.finish(compute(branch_in, 2.f, rows::GroupKind::TP, !exit.flags().compute_skips_sum()));
  }
  h = second.finish(compute(second.prepare(h, batch).values, 3.f, rows::GroupKind::ATTN_TP, false), batch);
  {
    const Tensor in = third.prepare(h, batch).values;
    StageRunner::Exit exit = third.exit(batch);
    h = exit.finish(compute(in, 2.f, rows::GroupKind::TP, !exit.flags().compute_skips_sum()));
  }
  h = experts.merge_branch(contribution, h, third, batch);
  const Tensor result = residual::norm(h, batch, final_norm);

  for (int64_t i = 0; i < tokens[dp]; ++i) {
    std::vector<float> r(kHidden), x, r2(kHidden), r3(kHidden), last(kHidden);
    for (int64_t c = 0; c < kHidden; ++c) r[c] = embedding(dp, i, c);
    const std::vector<float> a = rms_norm(r);
    for (int64_t c = 0; c < kHidden; ++c) r[c] += 3.f * a[c];
    x = rms_norm(r);
    for (int64_t c = 0; c < kHidden; ++c) r2[c] = r[c] + 2.f * x[c];
    const std::vector<float> a2 = rms_norm(r2);
    for (int64_t c = 0; c < kHidden; ++c) r3[c] = r2[c] + 3.f * a2[c];
    const std::vector<float> f3 = rms_norm(r3);
    for (int64_t c = 0; c < kHidden; ++c) last[c] = r3[c] + 2.f * f3[c] + 1.5f * x[c];
    const std::vector<float> expected = rms_norm(last);
    for (int64_t c = 0; c < kHidden; ++c)
      if (!close(static_cast<const float*>(result.row(i))[c], expected[c]))
        fail("longcat attn_dp=" + std::to_string(attn_dp) + ": token " + std::to_string(i) + " col " + std::to_string(c));
  }
}

}  // namespace seam::boundary::runner_test
