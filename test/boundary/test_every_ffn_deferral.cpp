// §2.5 step 5 and MixerExit: whether a sum may move to the next layer is read from the topology
// for every FFN, dense as well as sparse, and for every mixer — "sum movable" (no MoE-CP
// all-gather, no unmergeable EP x MoE-TP hybrid) and "batch allows deferral" (§1.1
// post_experts_sum_is_one_all_reduce, or LoRA / a TP1 shared expert with a provider's consent).
#include <doctest/doctest.h>

#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
// Always lets the LoRA / TP1-shared-expert path defer the all-reduce.
struct AllowingProvider : FusionProvider {
  bool can_defer_all_reduce(const StagePlan&, const BatchFacts&) const override { return true; }
};

FfnDecision ffn_decision(const PlanContext& ctx, StageDeclaration ffn,
                         std::shared_ptr<const FusionProvider> fusions = nullptr) {
  const auto stages = make_stages(ctx, {{attn()}, {std::move(ffn), nullptr, {.fusions = fusions}}},
                                  {.following = attn()});
  return stages[1].decide_ffn_exit(batch(ctx));
}

MixerDecision mixer_decision(const PlanContext& ctx) {
  const auto mm = make_stages(ctx, {{mixer()}, {mixer()}}, {.terminal = true});
  return mm[0].mixer_decision(batch(ctx));
}

PlanContext tp2(void (*tweak)(Topology&)) { return context(2, 1, ReductionPolicy::AR, tweak); }
}  // namespace

TEST_CASE("a dense FFN defers its TP sum exactly where the post-experts sum is one all-reduce (§1.1, §2.5 step 5)") {
  // Plain TP: one all-reduce over the TP group, so dense and sparse FFNs both hand it on.
  const PlanContext plain = tp2([](Topology&) {});
  CHECK(plain.topology.post_experts_sum_is_one_all_reduce());
  CHECK(ffn_decision(plain, dense()).completion == FfnCompletion::CARRY_SUM);
  CHECK(ffn_decision(plain, moe()).completion == FfnCompletion::CARRY_SUM);
  // An a2a backend or quantised communication: the reference completes the sum in compute, for a
  // dense FFN as for a MoE (seam_plan --pattern AFAE --tp 2 --a2a --policy ar).
  for (const PlanContext& ctx : {tp2([](Topology& t) { t.moe_a2a_backend = true; }),
                                 tp2([](Topology& t) { t.quantized_comm = true; })}) {
    CAPTURE(ctx.topology.describe());
    CHECK_FALSE(ctx.topology.post_experts_sum_is_one_all_reduce());
    const FfnDecision d = ffn_decision(ctx, dense());
    CHECK(d.completion == FfnCompletion::COMPLETE_NOW);
    CHECK_FALSE(d.flags.fuse_mlp_allreduce);
    CHECK_FALSE(d.carried_sum.has_value());
  }
}

TEST_CASE("a TP1 shared expert lets a dense FFN defer only with the provider's consent (§2.5 step 5)") {
  const PlanContext ctx = tp2([](Topology& t) { t.shared_expert_tp1 = true; });
  CHECK_FALSE(ctx.topology.post_experts_sum_is_one_all_reduce());
  CHECK(ffn_decision(ctx, dense()).completion == FfnCompletion::COMPLETE_NOW);
  CHECK(ffn_decision(ctx, dense(), std::make_shared<AllowingProvider>()).completion == FfnCompletion::CARRY_SUM);
  // Not under an a2a backend, whatever the provider says.
  const PlanContext a2a = tp2([](Topology& t) {
    t.shared_expert_tp1 = true;
    t.moe_a2a_backend = true;
  });
  CHECK(ffn_decision(a2a, dense(), std::make_shared<AllowingProvider>()).completion == FfnCompletion::COMPLETE_NOW);
}

TEST_CASE("a MoE-CP all-gather keeps a dense FFN's sum in compute (§2.5 sum movable)") {
  const PlanContext ctx = context(4, 1, ReductionPolicy::AR, [](Topology& t) {
    t.attn_cp = 2;
    t.attn_tp = 2;
    t.moe_cp_all_gather = true;
  });
  REQUIRE(ctx.topology.moe_gathers_over_moe_cp());
  CHECK(ctx.topology.post_experts_sum_is_one_all_reduce());  // movability alone decides here
  const FfnDecision d = ffn_decision(ctx, dense());
  CHECK(d.completion == FfnCompletion::COMPLETE_NOW);
  CHECK_FALSE(d.flags.fuse_mlp_allreduce);
}

TEST_CASE("the mixer exit's sum movable: no unmergeable EP x MoE-TP hybrid, no MoE-CP all-gather (§2.5 MixerExit)") {
  // Mergeable hybrid (MoE-DP 1): the EP and MoE-TP sums merge, a mixer hands its sum on.
  const PlanContext mergeable = context(4, 1, ReductionPolicy::AR, [](Topology& t) {
    t.moe_ep = 2;
    t.moe_tp = 2;
  });
  REQUIRE(mergeable.topology.can_merge_post_experts_all_reduce());
  CHECK(mixer_decision(mergeable).hands_on);
  // Unmergeable hybrid (MoE-DP 2): the mixer's compute completes its sum.
  const PlanContext unmergeable = context(8, 1, ReductionPolicy::AR, [](Topology& t) {
    t.moe_ep = 2;
    t.moe_tp = 2;
    t.moe_dp = 2;
  });
  REQUIRE_FALSE(unmergeable.topology.can_merge_post_experts_all_reduce());
  const MixerDecision hybrid = mixer_decision(unmergeable);
  CHECK_FALSE(hybrid.hands_on);
  CHECK_FALSE(hybrid.flags.skips_reduction);
  CHECK_FALSE(hybrid.carried_sum.has_value());
  // A MoE-CP all-gather: likewise.
  const PlanContext moe_cp = context(4, 1, ReductionPolicy::AR, [](Topology& t) {
    t.attn_cp = 2;
    t.attn_tp = 2;
    t.moe_cp_all_gather = true;
  });
  const MixerDecision gathered = mixer_decision(moe_cp);
  CHECK_FALSE(gathered.hands_on);
  CHECK_FALSE(gathered.flags.skips_reduction);
}
