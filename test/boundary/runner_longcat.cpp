// LongCat's shortcut through StageRunner (see runner_harness.h).
#include <cstdint>
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
// With an all-to-all MoE the source's input stays on this replica's rows (attention-TP slices under
// attention TP) while the dense branch FFN reads the DP-gathered rows: branch_input gathers attention
// TP, then DP (under MAX_LEN with attention TP > 1, a reduce-scatter into a scratch chunk then an
// all-gather); the moved input is checked row by row against the reference.
void run_longcat(const std::shared_ptr<comm::Communicator>& world, int attn_dp, PaddingMode padding, bool a2a) {
  const int tp = world->size();
  PlanContext ctx;
  ctx.topology = Topology::make(tp, attn_dp);
  if (a2a) {
    ctx.topology.moe_a2a_backend = true;
    ctx.topology.moe_ep = tp;
    ctx.topology.moe_tp = 1;
  }
  ctx.topology.validate();
  ctx.policy = ReductionPolicy::RS_RSV;
  const std::string label = "longcat attn_dp=" + std::to_string(attn_dp) +
                            (padding == PaddingMode::MAX_LEN ? " MAX_LEN" : " SUM_LEN") + (a2a ? " a2a" : "");
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
  // Uneven replicas under MAX_LEN (the last of four idle), so the DP buffer holds padding rows.
  std::vector<int64_t> tokens(attn_dp, 4);
  if (padding == PaddingMode::MAX_LEN)
    for (int d = 0; d < attn_dp; ++d) tokens[d] = d == 3 ? 0 : 3 + 2 * d;
  batch.facts = BatchFacts::make(tokens, dp, ctx.topology.attn_tp, padding);
  const int64_t local_rows = batch.facts.local_rows();
  Buffer embed_storage(static_cast<size_t>(local_rows * kHidden) * 4 + 4);
  const Tensor embed = embed_storage.as_tensor(DType::f32, local_rows, kHidden);
  for (int64_t i = 0; i < local_rows; ++i)
    for (int64_t c = 0; c < kHidden; ++c)
      static_cast<float*>(embed.row(i))[c] = i < tokens[dp] ? embedding(dp, i, c) : 0.f;

  // Compute: scale times the input, a partial over `group` summed by compute unless skipped.
  std::vector<Buffer> storage;
  // (Complete rows, neither split nor summed, where the stage's output owes no sum.)
  auto compute = [&](const Tensor& in, float scale, rows::GroupKind group, bool sum, bool partial = true) {
    storage.emplace_back(static_cast<size_t>(in.rows * kHidden) * 4 + 4);
    const Tensor out = storage.back().as_tensor(DType::f32, in.rows, kHidden);
    const float w = scale * (partial ? weight(groups.size(group), groups.rank_in(group)) : 1.f);
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
  // (An all-to-all MoE's combine returns complete rows: its output owes no sum.)
  const bool moe_partial = experts.stage().plan().path(BatchVariant::ORDINARY).stage.output.group.has_value();
  const Tensor moe_out = experts.branch_output(
      compute(moe_input, 1.5f, rows::GroupKind::MOE_OUTPUT, moe_partial, moe_partial), batch);
  Buffer moe_keep(static_cast<size_t>(moe_out.rows * kHidden) * 4 + 4);
  const Tensor contribution = moe_keep.as_tensor(DType::f32, moe_out.rows, kHidden);
  kernels::copy(moe_out, contribution);

  const Tensor branch_in = first.branch_input(moe_input, batch);
  // The moved input on the branch's rows: every replica's x = n(r1) at its offset in the DP buffer
  // (this replica's rows only when the branch reads local rows).
  const bool gathered = branch_in.rows == batch.facts.global_rows() && branch_in.rows != local_rows;
  if (a2a && attn_dp > 1 && !gathered)
    fail(label + ": the branch input was not moved onto the DP-gathered rows (" + std::to_string(branch_in.rows) + ")");
  for (int d = 0; d < attn_dp; ++d) {
    if (!gathered && d != dp) continue;
    for (int64_t i = 0; i < tokens[d]; ++i) {
      std::vector<float> r(kHidden);
      for (int64_t c = 0; c < kHidden; ++c) r[c] = embedding(d, i, c);
      const std::vector<float> a = rms_norm(r);
      for (int64_t c = 0; c < kHidden; ++c) r[c] += 3.f * a[c];
      const std::vector<float> x = rms_norm(r);
      const int64_t row = (gathered ? batch.facts.offset(d) : 0) + i;
      for (int64_t c = 0; c < kHidden; ++c)
        if (!close(static_cast<const float*>(branch_in.row(row))[c], x[c]))
          fail(label + ": branch input of replica " + std::to_string(d) + " token " + std::to_string(i) + " col " +
               std::to_string(c));
    }
  }
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

  // The merge leaves the output on the MoE's handoff rows: this rank's attention-TP slice of its
  // replica's rows under an all-to-all MoE with attention TP.
  const int64_t first_token = result.rows < local_rows ? groups.attn().tp * result.rows : 0;
  for (int64_t i = first_token; i < std::min(tokens[dp], first_token + result.rows); ++i) {
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
      if (!close(static_cast<const float*>(result.row(i - first_token))[c], expected[c]))
        fail(label + ": token " + std::to_string(i) + " col " + std::to_string(c));
  }
}

}  // namespace seam::boundary::runner_test
