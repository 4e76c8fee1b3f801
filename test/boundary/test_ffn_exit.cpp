// §8 test_ffn_exit (decision cases): what an FFN exit leaves to the next layer, under DP and not;
// the decision is made once and finish() sees exactly it; flags are scoped and restored, also on
// an exception; finalize deferral; SP keeps postprocess.
#include <doctest/doctest.h>

#include <optional>
#include <stdexcept>

#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
// A provider whose answers can change and that counts how often it is asked.
struct CountingProvider : FusionProvider {
  mutable int finalize_asked = 0, all_reduce_asked = 0;
  bool finalize = false, all_reduce = false;
  bool can_defer_finalize(const StagePlan&, const BatchFacts&) const override {
    ++finalize_asked;
    return finalize;
  }
  bool can_defer_all_reduce(const StagePlan&, const BatchFacts&) const override {
    ++all_reduce_asked;
    return all_reduce;
  }
};

StageBoundary ffn_layer(const PlanContext& ctx, StageDeclaration ffn = dense(), bool terminal = false,
                        std::shared_ptr<const FusionProvider> fusions = nullptr) {
  return make_stages(ctx, {{attn()}, {std::move(ffn), nullptr, {.fusions = fusions}}},
                     {.following = terminal ? std::nullopt : std::optional(attn()), .terminal = terminal})[1];
}
/// What an FFN exit leaves to the next layer.
struct LeftToNext {
  FfnCompletion completion{};
  DpStep dp_step{};
  std::optional<SumGroup> carried_sum{};
  bool fused_all_reduce = false;
  bool reduce_scatter = false;
  const char* described = nullptr;
};

void check_left(const FfnDecision& d, const LeftToNext& expected) {
  CHECK(d.completion == expected.completion);
  CHECK(d.dp_step == expected.dp_step);
  CHECK(d.carried_sum == expected.carried_sum);
  CHECK(d.flags.fuse_mlp_allreduce == expected.fused_all_reduce);
  CHECK(d.flags.mlp_reduce_scatter == expected.reduce_scatter);
  if (expected.described) CHECK(d.describe() == expected.described);
}
}  // namespace

TEST_CASE("a reduction left to the next layer declares its group, with no redistribution") {
  const PlanContext ctx = context(2);
  check_left(ffn_layer(ctx).decide_ffn_exit(batch(ctx)),
             {.completion = FfnCompletion::CARRY_SUM, .dp_step = DpStep::NONE,
              .carried_sum = SumGroup::TP, .fused_all_reduce = true,
              .described = "TP all_reduce at next input (deferred)"});
}

TEST_CASE("under DP an RS chosen by the exit is left to the next layer") {
  const PlanContext ctx = context(4, 2, ReductionPolicy::RS);
  check_left(ffn_layer(ctx).decide_ffn_exit(batch(ctx, PaddingMode::MAX_LEN)),
             {.completion = FfnCompletion::DEFER_DP_STEP, .dp_step = DpStep::REDUCE_SCATTER,
              .carried_sum = SumGroup::TP, .reduce_scatter = true,
              .described = "TP reduce_scatter at next input (deferred)"});
}

TEST_CASE("under DP a deferred sum carries its all-reduce and the DP scatter back") {
  const PlanContext ctx = context(4, 2, ReductionPolicy::RS);
  check_left(ffn_layer(ctx).decide_ffn_exit(batch(ctx, PaddingMode::SUM_LEN)),
             {.completion = FfnCompletion::CARRY_SUM_THEN_DP_SCATTER, .dp_step = DpStep::SCATTER,
              .carried_sum = SumGroup::TP, .fused_all_reduce = true});
}

TEST_CASE("other exits complete now; compute owes its sum exactly when no reduce-scatter takes it") {
  const PlanContext ctx = context(4, 2, ReductionPolicy::RS);
  const StageBoundary last = ffn_layer(ctx, dense(), /*terminal=*/true);
  for (PaddingMode mode : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) {
    const FfnDecision d = last.decide_ffn_exit(batch(ctx, mode));
    CHECK(d.completion == FfnCompletion::COMPLETE_NOW);
    const bool reduce_scatter = d.dp_step == DpStep::REDUCE_SCATTER;
    CHECK(reduce_scatter == (mode == PaddingMode::MAX_LEN));
    CHECK(d.flags.compute_skips_sum() == reduce_scatter);
  }
}

TEST_CASE("a layer declaring no deferral completes without asking whether it may defer") {
  auto provider = std::make_shared<CountingProvider>();
  const PlanContext ctx = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.lora = true; });
  const StageBoundary tail = ffn_layer(ctx, declare_ffn({.reduction = ProducerReduction::LOCAL_TAIL}), false, provider);
  const FfnDecision d = tail.decide_ffn_exit(batch(ctx));
  CHECK(d.completion == FfnCompletion::COMPLETE_NOW);
  CHECK(provider->all_reduce_asked == 0);
  CHECK(provider->finalize_asked == 1);  // asked on every FFN exit that has a provider
}

TEST_CASE("finish applies the decision the FFN saw, made exactly once, with flags scoped") {
  auto provider = std::make_shared<CountingProvider>();
  const PlanContext ctx = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.lora = true; });
  const StageBoundary ffn = ffn_layer(ctx, dense(), false, provider);
  provider->all_reduce = true;
  ExitFlags flags;
  {
    FfnExit exit = ffn.ffn_exit(flags, batch(ctx));
    CHECK(provider->finalize_asked == 1);
    CHECK(provider->all_reduce_asked == 1);
    CHECK(flags.fuse_mlp_allreduce);
    provider->all_reduce = false;  // predicates change mid-scope: the decision does not
    CHECK(exit.decision().completion == FfnCompletion::CARRY_SUM);
    CHECK(exit.flags().fuse_mlp_allreduce);
    CHECK(provider->all_reduce_asked == 1);
  }
  CHECK(flags == ExitFlags{});  // restored after the FFN

  ExitFlags outer{.mlp_reduce_scatter = true};
  CHECK_THROWS_AS(
      [&] {
        FfnExit exit = ffn.ffn_exit(outer, batch(ctx));
        throw std::runtime_error("compute failed");
      }(),
      std::runtime_error);
  CHECK(outer == ExitFlags{.mlp_reduce_scatter = true});  // restored on the exception too
}

TEST_CASE("finalize deferral publishes defer_moe_finalize") {
  auto provider = std::make_shared<CountingProvider>();
  provider->finalize = true;
  const PlanContext ctx = context(4);
  const FfnDecision mid = ffn_layer(ctx, moe(), false, provider).decide_ffn_exit(batch(ctx));
  CHECK(mid.flags.defer_moe_finalize);
  CHECK(mid.flags.fuse_mlp_allreduce);
  CHECK(mid.completion == FfnCompletion::CARRY_SUM);
  CHECK(mid.carried_sum == SumGroup::MOE_OUTPUT);
  // At the last layer only a provider's finalize deferral leaves anything for the final norm.
  const FfnDecision last = ffn_layer(ctx, moe(), true, provider).decide_ffn_exit(batch(ctx));
  CHECK(last.flags.defer_moe_finalize);
  CHECK(last.completion == FfnCompletion::CARRY_SUM);
  provider->finalize = false;
  const FfnDecision plain_last = ffn_layer(ctx, moe(), true, provider).decide_ffn_exit(batch(ctx));
  CHECK_FALSE(plain_last.flags.defer_moe_finalize);
  CHECK(plain_last.completion == FfnCompletion::COMPLETE_NOW);
}

TEST_CASE("a terminal finalize deferral without an output sum group completes the output now") {
  auto provider = std::make_shared<CountingProvider>();
  provider->finalize = true;
  const PlanContext ctx = context(1);
  const FfnDecision last = ffn_layer(ctx, moe(), true, provider).decide_ffn_exit(batch(ctx));
  CHECK(last.flags.defer_moe_finalize);  // compute may still hand its finalize on
  CHECK(last.completion == FfnCompletion::COMPLETE_NOW);
  CHECK_FALSE(last.carried_sum.has_value());
}

TEST_CASE("decide: RSv/RS bound for the next layer; scatter-only, last-layer, non-DP and SP cases") {
  // RSv topology (tp = attn_dp = moe_ep = 4): RSv for the next layer.
  const PlanContext rsv = context(4, 4, ReductionPolicy::RS_RSV, [](Topology& t) {
    t.moe_ep = 4;
    t.moe_tp = 1;
  });
  const FfnDecision d = ffn_layer(rsv).decide_ffn_exit(batch(rsv, PaddingMode::SUM_LEN));
  CHECK(d.dp_step == DpStep::REDUCE_SCATTERV);
  CHECK(d.completion == FfnCompletion::DEFER_DP_STEP);
  CHECK(d.describe() == "TP reduce_scatterv at next input (deferred)");
  // Last layer: the RSv runs at the exit.
  CHECK(ffn_layer(rsv, dense(), true).decide_ffn_exit(batch(rsv, PaddingMode::SUM_LEN)).describe() ==
        "TP reduce_scatterv at exit");
  // SP region: the FFN's linears complete their own output on the shard.
  const PlanContext sp = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.sequence_parallel = true; });
  const FfnDecision in_region = ffn_layer(sp).decide_ffn_exit(batch(sp, PaddingMode::MAX_LEN, BatchVariant::SEQUENCE_PARALLEL));
  CHECK(in_region.completion == FfnCompletion::COMPLETE_NOW);
  CHECK(in_region.flags == ExitFlags{});
  CHECK(ffn_layer(sp).decide_ffn_exit(batch(sp)).completion == FfnCompletion::CARRY_SUM);  // outside the region
}

TEST_CASE("under attention DP x DSA/MLA CP no batch reduce-scatters, RSvs or defers its FFN sum (§2.6 row 17)") {
  // The CP reduce-scatter needs attn_dp == 1 (§3.3), and the DP moves cannot reduce-scatter over
  // CP ranks: a decode batch on this topology (rows whole on every CP rank) scatters back.
  PlanContext ctx;
  ctx.topology = Topology::make(8, 2, 2);
  ctx.topology.enable_prefill_cp = ctx.topology.cp_over_attn_cp = true;
  ctx.topology.moe_ep = 2;  // RSv's topology condition holds too (moe_ep == attn_dp)
  ctx.topology.moe_tp = 4;
  ctx.topology.validate();
  for (ReductionPolicy policy : {ReductionPolicy::RS, ReductionPolicy::RSV, ReductionPolicy::RS_RSV}) {
    ctx.policy = policy;
    for (PaddingMode mode : {PaddingMode::MAX_LEN, PaddingMode::SUM_LEN}) {
      const FfnDecision d = ffn_layer(ctx).decide_ffn_exit(batch(ctx, mode));
      CHECK(d.dp_step == DpStep::SCATTER);
      CHECK_FALSE(d.flags.mlp_reduce_scatter);
      CHECK_FALSE(d.flags.fuse_mlp_allreduce);
      CHECK(d.completion == FfnCompletion::COMPLETE_NOW);
    }
  }
}
