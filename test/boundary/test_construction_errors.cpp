// §4.7: every construction and binding error that applies to the C++ planner, raised with its
// message and category. (Python-only type checks — "stage sources must be declarations", "a stage
// needs (declaration, norm[, options])", "make_stages requires stage declarations" — are
// compile-time errors here.)
#include <doctest/doctest.h>

#include "seam/errors.h"
#include "runtime/boundary/introspection.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
PlanContext topology(const ParallelConfig& config) {
  PlanContext ctx;
  static_cast<ParallelConfig&>(ctx.topology) = config;
  ctx.topology.validate();
  return ctx;
}
}  // namespace

TEST_CASE("declaration errors") {
  CHECK_THROWS_WITH_AS(declare_ffn({.reduction = ProducerReduction::PARTIAL}), "PARTIAL is not supported for ffn stages",
                       ValueError);
  CHECK_THROWS_WITH_AS(declare_attn({.reduction = ProducerReduction::LOCAL_TAIL}),
                       "LOCAL_TAIL is not supported for attention stages", ValueError);
  CHECK_THROWS_WITH_AS(declare_attn({.reduction = ProducerReduction::SCOPED, .output_transform = OutputTransform{"norm"}}),
                       "an attention output transform requires ALWAYS_PARTIAL", ValueError);
  CHECK_THROWS_WITH_AS(make_stages(context(4), {{attn()}, {declare_ffn({.dense_tp_size = 2})}}),
                       "dense FFN rows support local compute or the full TP group", ValueError);
  CHECK_THROWS_WITH_AS(dense().with_prepared_from(moe()).with_previous(attn()),
                       "choose a previous output or a prepared branch input", ValueError);
}

TEST_CASE("assembler errors") {
  const PlanContext ctx = context(2);
  CHECK_THROWS_WITH_AS(make_stages(ctx, {}), "make_stages needs at least one stage", ValueError);
  CHECK_THROWS_WITH_AS(make_stages(ctx, {{attn().entering_stack()}}),
                       "pass input sources to make_stages, not its declarations", ValueError);
  CHECK_THROWS_WITH_AS(make_stages(ctx, {{dense().as_terminal()}}), "pass terminal to make_stages, not its declarations",
                       ValueError);
  CHECK_THROWS_WITH_AS(make_stages(ctx, {{dense()}}, {.previous = attn().entering_stack(), .prepared_from = moe()}),
                       "choose a previous output or a prepared branch input", ValueError);
  CHECK_THROWS_WITH_AS(make_stages(ctx, {{dense(), nullptr, {.qkv_latent = [](const Tensor&) {}}}}),
                       "unsupported FFN options: ['qkv_latent_func']", TypeError);
  CHECK_THROWS_WITH_AS(make_attn_stage(ctx, {dense().entering_stack()}), "make_attn_stage requires an attention declaration",
                       TypeError);
  CHECK_THROWS_WITH_AS(make_ffn_stage(ctx, {attn().entering_stack()}), "make_ffn_stage requires an FFN declaration",
                       TypeError);
  const StageDeclaration a = attn().entering_stack();
  CHECK_THROWS_WITH_AS(make_attn_stage(ctx, {a}, dense().with_previous(attn().entering_stack().as_terminal())),
                       "the following declaration must consume this stage's output", ValueError);
  CHECK_NOTHROW(make_attn_stage(ctx, {a}, dense().with_previous(a)));
  PlanContext unresolved = ctx;
  unresolved.policy = ReductionPolicy::AUTO;
  CHECK_THROWS_WITH_AS(make_stages(unresolved, {{attn()}}), "boundary_reduction must be resolved before model construction",
                       ValueError);
}

TEST_CASE("edge and source errors") {
  const PlanContext ctx = context(2);
  CHECK_THROWS_WITH_AS(make_edge(ctx, BatchVariant::ORDINARY, nullptr, nullptr), "a boundary needs at least one declared side",
                       ValueError);
  // An attention producer whose own source is not described: its residual placement is unknown.
  const StageDeclaration bare_attention = attn();
  CHECK_THROWS_WITH_AS(make_ffn_stage(ctx, {dense().with_previous(bare_attention)}),
                       "attention output needs its incoming residual placement", ValueError);
  const PlanContext scattered = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.attn_tp_input_scattered = true; });
  CHECK_THROWS_WITH_AS(make_stages(scattered, {{dense()}}, {.prepared_from = moe().with_previous(attn().entering_stack())}),
                       "prepared branch transport requires ordinary token rows", NotSupportedError);
  CHECK_THROWS_WITH_AS(RowMove::checked(Layout::of({TokenAxis::ATTN_DP}), Layout::of({TokenAxis::ATTN_TP_SCATTER})),
                       "rows={ATTN_DP} to={ATTN_TP_SCATTER}", NotSupportedError);
  CHECK_THROWS_WITH_AS(Topology::make(2).sum_group_ranks(static_cast<SumGroup>(9), 0),
                       doctest::Contains("unsupported output sum group"), ValueError);
}

TEST_CASE("an active variant without a bound path") {
  const auto stages = make_stages(context(2), {{attn()}});
  CHECK_THROWS_WITH_AS(stages[0].plan().path(BatchVariant::SEQUENCE_PARALLEL),
                       "no stage boundary path for the active SEQUENCE_PARALLEL batch", NotSupportedError);
}

TEST_CASE("unsupported CP / MoE / MHC combinations") {
  const PlanContext gqa_dp_cp = topology({.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_ep = 4, .moe_tp = 1,
                                          .enable_prefill_cp = true, .moe_a2a_backend = true});
  CHECK_THROWS_WITH_AS(make_stages(gqa_dp_cp, {{attn()}, {moe()}}),
                       "a MoE dispatched per DP shard under attention DP and GQA prefill CP", NotSupportedError);

  const PlanContext dsa = topology({.tp = 2, .attn_cp = 2, .moe_tp = 1, .moe_dp = 2,
                                    .enable_prefill_cp = true, .cp_over_attn_cp = true});
  CHECK_THROWS_WITH_AS(make_stages(dsa, {{attn()}, {moe()}}),
                       "a MoE on the TP group with moe_dp_size == attn_cp_size under DSA or MLA prefill CP",
                       NotSupportedError);

  const PlanContext dp_cp =
      topology({.tp = 4, .attn_dp = 2, .attn_cp = 2, .moe_tp = 2, .moe_dp = 2});
  CHECK_THROWS_WITH_AS(make_stages(dp_cp, {{attn()}, {moe()}}),
                       "a MoE on the TP group with moe_dp_size == attn_cp_size under attention DP and attention CP",
                       NotSupportedError);

  const StageDeclaration mhc_moe = declare_ffn({.sparse = true, .update = MHC_FFN_UPDATE});
  const PlanContext moe_cp =
      topology({.tp = 2, .attn_cp = 2, .moe_tp = 2, .moe_cp_all_gather = true});
  CHECK_THROWS_WITH_AS(make_stages(moe_cp, {{attn()}, {mhc_moe}}), "MHC does not support a MoE gathered over the MoE-CP group",
                       NotSupportedError);

  const PlanContext scattered_cp =
      topology({.tp = 2, .attn_cp = 2, .moe_tp = 2, .attn_tp_input_scattered = true});
  CHECK_THROWS_WITH_AS(make_stages(scattered_cp, {{attn()}, {declare_ffn({.update = MHC_FFN_UPDATE})}}),
                       "MHC with input-scattered attention under attention CP", NotSupportedError);

  const PlanContext gqa_cp =
      topology({.tp = 2, .attn_cp = 2, .moe_tp = 2, .enable_prefill_cp = true});
  const StageDeclaration mhc_attention = declare_attn({.read = MHC_READ, .update = MHC_ATTENTION_UPDATE});
  CHECK_THROWS_WITH_AS(make_stages(gqa_cp, {{mhc_attention}, {dense()}}), "MHC with a gather over attention CP",
                       NotSupportedError);
  // The plain add gathers over CP in the same topology.
  const auto ok = make_stages(gqa_cp, {{attn()}, {dense()}});
  CHECK(ok[1].plan().path(BatchVariant::CONTEXT_PARALLEL).entry.plain->step.input_move == InputMove::CP_GATHER);
}
