// §8 test_reduction_fusion (decision cases): the post-experts reduction group and its merge,
// the fuse gate (is the sum movable), and the defer decision with and without attention DP.
#include <doctest/doctest.h>

#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
Topology moe_topology(int ep, int moe_tp, int moe_dp) {
  Topology t = Topology::make(ep * moe_tp * moe_dp);
  t.moe_ep = ep;
  t.moe_tp = moe_tp;
  t.moe_dp = moe_dp;
  t.validate();
  return t;
}

PlanContext with(const Topology& t, ReductionPolicy policy = ReductionPolicy::RS_RSV) {
  PlanContext ctx;
  ctx.topology = t;
  ctx.policy = policy;
  return ctx;
}

FfnExitFacts exit_facts(const PlanContext& ctx, StageDeclaration ffn, bool terminal = false) {
  const auto stages = make_stages(ctx, {{attn()}, {std::move(ffn)}},
                                  {.following = terminal ? std::nullopt : std::optional(attn()), .terminal = terminal});
  return stages[1].plan().path(BatchVariant::ORDINARY).ffn_exit;
}

bool defers(const PlanContext& ctx, StageDeclaration ffn, const BatchFacts& b, bool terminal = false) {
  const auto stages = make_stages(ctx, {{attn()}, {std::move(ffn)}},
                                  {.following = terminal ? std::nullopt : std::optional(attn()), .terminal = terminal});
  return stages[1].decide_ffn_exit(b).flags.fuse_mlp_allreduce;
}

struct AcceptingProvider : FusionProvider {
  bool can_defer_all_reduce(const StagePlan&, const BatchFacts&) const override { return true; }
};
}  // namespace

TEST_CASE("post-experts all-reduce: hybrid EP x TP merges into one TP all-reduce") {
  CHECK(moe_topology(2, 2, 1).post_experts_reduction_group() == Topology::MoeOutputGroup::TP);
  CHECK(moe_topology(2, 2, 2).post_experts_reduction_group() == Topology::MoeOutputGroup::MOE_TP);  // EP then MoE-TP
  CHECK(moe_topology(4, 1, 1).post_experts_reduction_group() == Topology::MoeOutputGroup::EP);
  CHECK(moe_topology(1, 4, 1).post_experts_reduction_group() == Topology::MoeOutputGroup::MOE_TP);
  CHECK(moe_topology(2, 2, 1).can_merge_post_experts_all_reduce());
  CHECK_FALSE(moe_topology(2, 2, 2).can_merge_post_experts_all_reduce());
  CHECK_FALSE(moe_topology(4, 1, 1).can_merge_post_experts_all_reduce());
  CHECK_FALSE(moe_topology(1, 4, 1).can_merge_post_experts_all_reduce());
}

TEST_CASE("fusion group resolution: EP2/TP2/DP1 is the TP group of 4; pure EP and pure TP their own") {
  const Topology hybrid = moe_topology(2, 2, 1);
  const auto ranks = hybrid.sum_group_ranks(SumGroup::MOE_OUTPUT, 3);
  CHECK(ranks.size() == 4);
  CHECK(ranks[3] == 3);
  CHECK(moe_topology(4, 1, 1).sum_group_ranks(SumGroup::MOE_OUTPUT, 2) == moe_topology(4, 1, 1).moe_ep_ranks(2));
  CHECK(moe_topology(1, 2, 2).sum_group_ranks(SumGroup::MOE_OUTPUT, 2) == std::vector<int>{2, 3});
}

TEST_CASE("fuse gate: which MoE sums may move to the next layer") {
  CHECK(exit_facts(with(moe_topology(2, 2, 1)), moe()).sum_movable);        // hybrid, mergeable
  CHECK_FALSE(exit_facts(with(moe_topology(2, 2, 2)), moe()).sum_movable);  // MoE-DP blocks the merge
  CHECK(exit_facts(with(moe_topology(1, 4, 1)), moe()).sum_movable);        // pure TP
  CHECK(exit_facts(with(moe_topology(4, 1, 1)), moe()).sum_movable);        // pure EP
  Topology moe_cp = Topology::make(2, 1, 2);  // GQA CP: the MoE gathers over the MoE-CP group
  moe_cp.moe_cp_all_gather = true;
  CHECK_FALSE(exit_facts(with(moe_cp), moe()).sum_movable);
}

TEST_CASE("defer decision without attention DP") {
  const BatchFacts b = batch(context(4));
  CHECK(defers(with(moe_topology(1, 4, 1)), moe(), b));
  CHECK(defers(with(moe_topology(4, 1, 1)), moe(), b));
  auto variant = [](auto tweak) {
    Topology t = moe_topology(1, 4, 1);
    tweak(t);
    return with(t);
  };
  // A fused kernel taking the batch or not does not change the decision.
  auto provider = std::make_shared<AcceptingProvider>();
  const PlanContext plain = with(moe_topology(1, 4, 1));
  CHECK(make_stages(plain, {{attn()}, {moe(), nullptr, {.fusions = provider}}}, {.following = attn()})[1]
            .decide_ffn_exit(b).flags.fuse_mlp_allreduce);
  // Never for: an a2a MoE (complete output), an already complete output, quantized comms, the
  // last layer, no tokens anywhere, a TP1 shared expert or LoRA without a provider, a non-TP group.
  CHECK_FALSE(defers(variant([](Topology& t) { t.moe_a2a_backend = true; t.moe_ep = 4; t.moe_tp = 1; }), moe(), b));
  CHECK_FALSE(defers(variant([](Topology& t) { t.moe_output_complete = true; }), moe(), b));
  CHECK_FALSE(defers(variant([](Topology& t) { t.quantized_comm = true; }), moe(), b));
  CHECK_FALSE(defers(plain, moe(), b, /*terminal=*/true));
  CHECK_FALSE(defers(plain, moe(), batch(plain, {0}, PaddingMode::MAX_LEN)));
  CHECK_FALSE(defers(variant([](Topology& t) { t.shared_expert_tp1 = true; }), moe(), b));
  CHECK_FALSE(defers(variant([](Topology& t) { t.lora = true; }), moe(), b));
  CHECK_FALSE(defers(with(moe_topology(1, 2, 2)), moe(), b));
  // LoRA defers when its provider accepts the batch.
  const PlanContext lora = variant([](Topology& t) { t.lora = true; });
  CHECK(make_stages(lora, {{attn()}, {moe(), nullptr, {.fusions = provider}}}, {.following = attn()})[1]
            .decide_ffn_exit(b).flags.fuse_mlp_allreduce);
  // An input-scattered batch reduce-scatters instead.
  const PlanContext scattered = context(4, 1, ReductionPolicy::RS, [](Topology& t) { t.attn_tp_input_scattered = true; });
  const FfnDecision d = make_stages(scattered, {{attn()}, {dense()}}, {.following = attn()})[1].decide_ffn_exit(
      batch(scattered, PaddingMode::MAX_LEN, BatchVariant::INPUT_SCATTERED));
  CHECK_FALSE(d.flags.fuse_mlp_allreduce);
  CHECK(d.flags.mlp_reduce_scatter);
  CHECK(d.declared_sum == SumGroup::TP);
}

TEST_CASE("defer decision under attention DP") {
  const PlanContext ar = context(4, 2, ReductionPolicy::AR);
  // Defers when the exit would only scatter; decides from every replica's tokens.
  CHECK(defers(ar, dense(), batch(ar, {0, 8}, PaddingMode::SUM_LEN)));
  CHECK_FALSE(defers(ar, dense(), batch(ar, {0, 0}, PaddingMode::SUM_LEN)));
  // Not with an RS or RSv, nor inside a LayerNorm-SP region.
  const PlanContext rs = context(4, 2, ReductionPolicy::RS);
  CHECK_FALSE(defers(rs, dense(), batch(rs, {4, 8}, PaddingMode::MAX_LEN)));
  const PlanContext rsv = context(4, 4, ReductionPolicy::RSV, [](Topology& t) {
    t.moe_ep = 4;
    t.moe_tp = 1;
  });
  CHECK_FALSE(defers(rsv, dense(), batch(rsv, {1, 2, 3, 4}, PaddingMode::SUM_LEN)));
  const PlanContext sp = context(4, 2, ReductionPolicy::AR, [](Topology& t) { t.sequence_parallel = true; });
  CHECK_FALSE(defers(sp, dense(), batch(sp, {4, 8}, PaddingMode::SUM_LEN, BatchVariant::SEQUENCE_PARALLEL)));
}

TEST_CASE("the post-experts sum is one all-reduce only over the TP group itself") {
  CHECK(moe_topology(1, 4, 1).post_experts_sum_is_one_all_reduce());
  CHECK(moe_topology(4, 1, 1).post_experts_sum_is_one_all_reduce());
  CHECK_FALSE(moe_topology(1, 2, 2).post_experts_sum_is_one_all_reduce());  // a separate group
  CHECK_FALSE(moe_topology(2, 2, 1).post_experts_sum_is_one_all_reduce());  // hybrid
}
