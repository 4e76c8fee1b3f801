// §8 test_boundary_output_policy: the DP skip flag and the collective are selected together over
// the full product of policy x RSv topology x padding x RS usability; auto resolution; output
// transforms gate the optional transports; a MoE never skips from topology alone.
#include <doctest/doctest.h>

#include "seam/errors.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
constexpr BatchVariant kOrdinary = BatchVariant::ORDINARY;
const ReductionPolicy kPolicies[] = {ReductionPolicy::AR, ReductionPolicy::RS, ReductionPolicy::RSV,
                                     ReductionPolicy::RS_RSV};
}  // namespace

TEST_CASE("DP skip flag and collective are selected together (policy x varlen x max_len x can_rs)") {
  for (ReductionPolicy policy : kPolicies)
    for (bool varlen : {false, true})
      for (bool max_len : {false, true})
        for (bool can_rs : {false, true})
          for (bool terminal : {false, true}) {
            CAPTURE(policy_name(policy));
            CAPTURE(varlen);
            CAPTURE(max_len);
            CAPTURE(can_rs);
            CAPTURE(terminal);
            // tp = attn_dp = 4; RSv needs moe_ep == attn_dp; RS needs every DP rank in the gather.
            const PlanContext ctx = context(4, 4, policy, [&](Topology& t) {
              t.moe_ep = varlen ? 4 : 1;
              t.moe_tp = varlen ? 1 : 4;
              t.elastic_ep_active_dp = can_rs ? 0 : 2;
            });
            const auto stages = make_stages(ctx, {{attn()}, {dense()}}, {.terminal = terminal});
            const BatchFacts b = batch(ctx, {5, 3, 0, 8}, max_len ? PaddingMode::MAX_LEN : PaddingMode::SUM_LEN);
            const FfnDecision d = stages[1].decide_ffn_exit(b);

            const bool rsv = varlen && policy_allows_reduce_scatterv(policy);
            const bool rs = !rsv && max_len && can_rs && policy_allows_reduce_scatter(policy);
            const DpStep expected = rsv ? DpStep::REDUCE_SCATTERV : rs ? DpStep::REDUCE_SCATTER : DpStep::SCATTER;
            CHECK(d.dp_step == expected);
            CHECK(d.flags.mlp_reduce_scatter == (expected != DpStep::SCATTER));
            // A chosen RS/RSv runs at the next input unless the layer is last; a plain scatter
            // defers the all-reduce + scatter instead (the compute then skips its sum).
            if (expected != DpStep::SCATTER)
              CHECK(d.completion == (terminal ? FfnCompletion::COMPLETE_NOW : FfnCompletion::DEFER_DP_STEP));
            else
              CHECK(d.completion == (terminal ? FfnCompletion::COMPLETE_NOW : FfnCompletion::CARRY_SUM_THEN_DP_SCATTER));
            CHECK(d.flags.fuse_mlp_allreduce == (!terminal && expected == DpStep::SCATTER));
          }
}

TEST_CASE("the CLI policy reaches construction: auto resolves before it, per architecture") {
  const PolicyRegistry registry = PolicyRegistry::with_defaults();
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.dummy = true}) == ReductionPolicy::RS_RSV);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"Qwen3ForCausalLM"}}) == ReductionPolicy::AR);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"LongcatFlashForCausalLM"}}) == ReductionPolicy::RSV);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.model_type = "qwen3_vl_text"}) == ReductionPolicy::AR);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"LlamaForCausalLM"}}) == ReductionPolicy::RS_RSV);
  // The nested text config decides when the outer one has no rule.
  const ModelFacts vl{.architectures = {"SomeVLWrapper"}, .nested = {{.model_type = "qwen3"}}};
  CHECK(registry.resolve(ReductionPolicy::AUTO, vl) == ReductionPolicy::AR);
  CHECK(registry.resolve(ReductionPolicy::RS, vl) == ReductionPolicy::RS);  // an explicit policy stays
  // An engine registers its own architecture; a draft checkpoint resolves with its own facts.
  PolicyRegistry engine = registry;
  engine.register_architecture("MyDraftForCausalLM", ReductionPolicy::RS);
  CHECK(engine.resolve(ReductionPolicy::AUTO, {.architectures = {"MyDraftForCausalLM"}}) == ReductionPolicy::RS);
  CHECK(parse_policy("rs+rsv") == ReductionPolicy::RS_RSV);
  CHECK_FALSE(parse_policy("fastest").has_value());

  PlanContext unresolved = context(2);
  unresolved.policy = ReductionPolicy::AUTO;
  CHECK_THROWS_WITH_AS(make_stages(unresolved, {{attn()}, {dense()}}),
                       "boundary_reduction must be resolved before model construction", ValueError);
}

TEST_CASE("MiniCPM-V 4.5 is keyed by model_type and version, not by an architecture name (§2.1)") {
  const PolicyRegistry registry = PolicyRegistry::with_defaults();
  // Every MiniCPM-V version names the same architecture; only model_type + version 4.5 selects ar.
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"MiniCPMV"}, .model_type = "minicpmv", .version = "4.5"}) ==
        ReductionPolicy::AR);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.model_type = "minicpmv", .version = "4.5"}) == ReductionPolicy::AR);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.model_type = "minicpmv", .version = "04.5"}) == ReductionPolicy::AR);
  // Other versions, no version, or a near miss fall to the default.
  for (const char* other : {"2.6", "4.0", "4", "4.50", "4.5.1", "", "4.5a"}) {
    CAPTURE(other);
    CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"MiniCPMV"}, .model_type = "minicpmv", .version = other}) ==
          ReductionPolicy::RS_RSV);
  }
  // The version belongs to minicpmv only: another model_type at 4.5 is not matched.
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.model_type = "minicpmo", .version = "4.5"}) == ReductionPolicy::RS_RSV);
  // An architecture name alone does not match, not even one that names 4.5: only model_type and
  // version do.
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"MiniCPMV4_5ForConditionalGeneration"}}) ==
        ReductionPolicy::RS_RSV);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"MiniCPMV"}}) == ReductionPolicy::RS_RSV);
  // A rule on an architecture still comes first; the nested config is searched after the version.
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.architectures = {"LongcatFlashForCausalLM"}, .model_type = "minicpmv",
                                                 .version = "4.5"}) == ReductionPolicy::RSV);
  CHECK(registry.resolve(ReductionPolicy::AUTO, {.model_type = "minicpmv", .version = "2.6",
                                                 .nested = {{.model_type = "qwen3"}}}) == ReductionPolicy::AR);
  // An engine may register its own versioned rule; a malformed version is refused.
  PolicyRegistry engine = registry;
  engine.register_model_version("minicpmv", "2.6", ReductionPolicy::RS);
  CHECK(engine.resolve(ReductionPolicy::AUTO, {.model_type = "minicpmv", .version = "2.6"}) == ReductionPolicy::RS);
  CHECK(engine.resolve(ReductionPolicy::AUTO, {.model_type = "minicpmv", .version = "4.5"}) == ReductionPolicy::AR);
  CHECK_THROWS_WITH_AS(engine.register_model_version("minicpmv", "4.x", ReductionPolicy::AR),
                       "model version '4.x' is not dot-separated integers", ValueError);
  CHECK(parse_model_version("4.5") == std::vector<int>{4, 5});
  CHECK_FALSE(parse_model_version("4..5").has_value());
  CHECK_FALSE(parse_model_version("").has_value());
}

TEST_CASE("RSv needs attention TP 1; under attention TP > 1 the exit falls back to RS or the scatter (§3.1, §2.1)") {
  // moe_ep == attn_dp in both: only attention TP differs.
  const auto rsv_shape = [](Topology& t) {
    t.moe_ep = t.attn_dp;
    t.moe_tp = t.tp / t.attn_dp;
  };
  for (ReductionPolicy policy : {ReductionPolicy::RSV, ReductionPolicy::RS_RSV})
    for (bool max_len : {false, true}) {
      CAPTURE(policy_name(policy));
      CAPTURE(max_len);
      const PaddingMode padding = max_len ? PaddingMode::MAX_LEN : PaddingMode::SUM_LEN;
      const PlanContext tp1 = context(2, 2, policy, rsv_shape);  // attn_tp 1
      REQUIRE(tp1.topology.attn_tp == 1);
      CHECK(tp1.topology.should_use_dp_reduce_scatterv());
      const auto s1 = make_stages(tp1, {{attn()}, {moe()}}, {.terminal = true});
      CHECK(s1[1].decide_ffn_exit(batch(tp1, {5, 2}, padding)).dp_step == DpStep::REDUCE_SCATTERV);

      const PlanContext tp2 = context(4, 2, policy, rsv_shape);  // attn_tp 2
      REQUIRE(tp2.topology.attn_tp == 2);
      CHECK_FALSE(tp2.topology.should_use_dp_reduce_scatterv());
      const auto s2 = make_stages(tp2, {{attn()}, {moe()}}, {.terminal = true});
      const FfnDecision d = s2[1].decide_ffn_exit(batch(tp2, {6, 2}, padding));
      // RS only when the policy grants it and the batch is MAX_LEN; otherwise all-reduce + scatter.
      const bool rs = max_len && policy == ReductionPolicy::RS_RSV;
      CHECK(d.dp_step == (rs ? DpStep::REDUCE_SCATTER : DpStep::SCATTER));
      CHECK(d.describe() == (rs ? "MOE_OUTPUT reduce_scatter at exit" : "MOE_OUTPUT all_reduce in compute, DP scatter at exit"));
    }
}

TEST_CASE("ar grants no optional scatter; the permissions follow the policy") {
  for (ReductionPolicy policy : kPolicies) {
    const PlanContext ctx = context(4, 2, policy);
    const auto stages = make_stages(ctx, {{attn()}, {dense()}});  // outlives `out` (ASan: use after free)
    const StageOutput& out = stages[1].plan().path(kOrdinary).stage.output;
    CHECK(out.leaves_for_reduce_scatter == policy_allows_reduce_scatter(policy));
    CHECK(out.leaves_for_reduce_scatterv == policy_allows_reduce_scatterv(policy));
    CHECK(out.leaves_for_next_layer);  // deferral is not a policy permission
  }
}

TEST_CASE("a MoE cannot skip its sum from topology without a boundary request") {
  // RSv topology (moe_ep == attn_dp) but the ar policy: plain scatter, compute sums.
  const PlanContext ctx = context(4, 4, ReductionPolicy::AR, [](Topology& t) {
    t.moe_ep = 4;
    t.moe_tp = 1;
  });
  const auto stages = make_stages(ctx, {{attn()}, {moe()}}, {.terminal = true});
  const FfnDecision d = stages[1].decide_ffn_exit(batch(ctx, PaddingMode::SUM_LEN));
  CHECK(d.dp_step == DpStep::SCATTER);
  CHECK_FALSE(d.flags.compute_skips_sum());
}

TEST_CASE("an output transform without pre-RS permission disables defer, RS and RSv") {
  const PlanContext ctx = context(4, 2);
  const auto plain_transform = make_stages(ctx, {{attn()}, {declare_ffn({.output_transform = OutputTransform{"scale"}})}});
  const StageOutput& out = plain_transform[1].plan().path(kOrdinary).stage.output;
  CHECK_FALSE(out.leaves_for_next_layer);
  CHECK_FALSE(out.leaves_for_reduce_scatter);
  CHECK_FALSE(out.leaves_for_reduce_scatterv);
  const FfnDecision d = plain_transform[1].decide_ffn_exit(batch(ctx, PaddingMode::MAX_LEN));
  CHECK(d.dp_step == DpStep::SCATTER);
  CHECK(d.completion == FfnCompletion::COMPLETE_NOW);

  const auto pre_rs = make_stages(ctx, {{attn()}, {declare_ffn({.output_transform = OutputTransform{"scale", true}})}});
  const StageOutput& allowed = pre_rs[1].plan().path(kOrdinary).stage.output;
  CHECK_FALSE(allowed.leaves_for_next_layer);  // a transform never moves past the exit
  CHECK(allowed.leaves_for_reduce_scatter);
  CHECK(allowed.leaves_for_reduce_scatterv);
  CHECK(pre_rs[1].decide_ffn_exit(batch(ctx, PaddingMode::MAX_LEN)).dp_step == DpStep::REDUCE_SCATTER);
}
