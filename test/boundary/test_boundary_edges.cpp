// §8 test_boundary_edges: the consumer half depends only on its own side; mixer/FFN edges; the
// producer's update chooses the order (both capabilities prebound and dispatched); fusion filters;
// lifetime and pipeline rules; the exit edge's rows; the capture certificate a local FFN hands its
// producer; the consumer runs its declared read; unsupported transitions and their messages.
#include <doctest/doctest.h>

#include "seam/errors.h"
#include "runtime/boundary/output_move.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
constexpr Layout kDp = Layout::of({TokenAxis::ATTN_DP});
constexpr Layout kTp = Layout::of({TokenAxis::ATTN_TP_SCATTER});
constexpr BatchVariant kOrdinary = BatchVariant::ORDINARY;

// An edge from attention rows {DP} owing ATTN_TP (declared) to an FFN on full rows.
EdgeDecl attention_to_full_rows(UpdateCapabilities caps, ReadFacts read = NORM_READ) {
  EdgeDecl e;
  e.produced.layout = kDp;
  e.produced.group = SumGroup::ATTN_TP;
  e.produced.always_leaves = true;
  e.residual = kDp;
  e.need = StageInput{Layout{}, Layout{}, read};
  e.residual_to = kDp;
  e.capabilities = caps;
  return e;
}

// A provider offering one fused FFN input per group, to see which the binder keeps.
struct TwoGroupProvider : FusionProvider {
  std::vector<FusedMlpInput> ffn_input(const StagePlan&) const override {
    return {{"tp_kernel", SumGroup::TP, nullptr, nullptr}, {"attn_tp_kernel", SumGroup::ATTN_TP, nullptr, nullptr}};
  }
  std::vector<CarriedFusion> attention_input(const StagePlan&) const override { return {{"carried", nullptr}}; }
};

// An FFN input whose first kernel certifies a fresh residual for batches with tokens; the second
// never does (only the first may speak for the input path).
struct CertifyingProvider : FusionProvider {
  std::vector<FusedMlpInput> ffn_input(const StagePlan&) const override {
    return {{"fresh", SumGroup::ATTN_TP, nullptr, [](const BatchFacts& b) { return b.has_tokens(); }},
            {"in_place", SumGroup::ATTN_TP, nullptr, [](const BatchFacts&) { return false; }}};
  }
};
}  // namespace

TEST_CASE("the consumer half depends only on its own side on a complete edge") {
  std::optional<EntryStep> first;
  for (int combo = 0; combo < 8; ++combo) {
    EdgeDecl e;
    e.produced.layout = kDp;
    e.produced.leaves_for_next_layer = combo & 1;
    e.produced.leaves_for_reduce_scatter = combo & 2;
    e.produced.leaves_for_reduce_scatterv = combo & 4;
    e.produced.group = (combo & 1) ? std::optional(SumGroup::TP) : std::nullopt;  // carried, not declared
    e.residual = kDp;
    e.need = StageInput{kDp, {}, NORM_QUANT_READ};
    e.residual_to = kDp;
    e.capabilities.plain = true;
    const EntryStep step = select_entry_step(e, true, false, {});
    if (!first) first = step;
    CHECK(step == *first);
  }
  CHECK(first->read == ReadKind::UPDATE_READ);
  CHECK_FALSE(first->all_reduce.has_value());
}

TEST_CASE("mixer to mixer under attention DP: the exit keeps its rows, the entry reads plainly") {
  const PlanContext ctx = context(2, 2);  // attn_tp = 1
  const auto stages = make_stages(ctx, {{mixer()}, {mixer()}}, {.terminal = true});
  const BoundPath& first = stages[0].plan().path(kOrdinary);
  CHECK(first.mixer_exit.flags == ExitFlags{});
  const EntryStep& entry = stages[1].plan().path(kOrdinary).entry.plain->step;
  CHECK(entry == EntryStep{});
}

TEST_CASE("FFN to FFN under DP replicates the complete output with a DP gather") {
  const PlanContext ctx = context(4, 2);
  const auto stages = make_stages(ctx, {{dense()}, {dense()}}, {.terminal = true});
  const EntryStep& entry = stages[1].plan().path(kOrdinary).entry.plain->step;
  CHECK(entry.read == ReadKind::DP_REPLICATE_GATHER);
  CHECK_FALSE(entry.all_reduce.has_value());
}

TEST_CASE("a TP sum declared on DP rows is not supported") {
  // An owed sum the consumer cannot complete names the two sides only: f"{produced=} {need=}".
  EdgeDecl e = attention_to_full_rows({.plain = true});
  e.produced.group = SumGroup::TP;
  e.need->layout = kDp;
  CHECK_THROWS_WITH_AS(select_entry_step(e, true, false, {}), "produced={ATTN_DP} owes TP (declared) need={ATTN_DP}",
                       NotSupportedError);
  e.need->layout = Layout{};  // gathered over DP: still a TP sum on sharded rows
  CHECK_THROWS_WITH_AS(select_entry_step(e, true, false, {}), "produced={ATTN_DP} owes TP (declared) need={}",
                       NotSupportedError);
  e.produced.group.reset();   // always_leaves without a group
  CHECK_THROWS_WITH_AS(select_entry_step(e, true, false, {}), "produced={ATTN_DP}", NotSupportedError);
}

TEST_CASE("unsupported consumer transitions name the residual unless the sum or a CP gather is missing") {
  // Gathered over CP without CP moves (not a CP batch): f"{produced=} {need=}".
  constexpr Layout kCp = Layout::of({TokenAxis::ATTN_CP});
  EdgeDecl cp;
  cp.produced.layout = cp.residual = kCp;
  cp.need = StageInput{Layout{}, {}, NORM_READ};
  cp.residual_to = kCp;
  cp.capabilities.plain = true;
  CHECK_THROWS_WITH_AS(select_entry_step(cp, true, false, {}), "produced={ATTN_CP} need={}", NotSupportedError);
  // A slice of rows the residual is not on: f"{produced=} {residual=} {need=}".
  EdgeDecl sliced = attention_to_full_rows({.plain = true});
  sliced.produced.layout = sliced.residual = Layout{};
  sliced.need->layout = kTp;
  sliced.residual_to = Layout{};
  CHECK_THROWS_WITH_AS(select_entry_step(sliced, true, false, {}),
                       "produced={} owes ATTN_TP (declared) residual={} need={ATTN_TP_SCATTER}", NotSupportedError);
}

TEST_CASE("fused inputs are filtered to the owed group, and offered only for plain reads") {
  auto provider = std::make_shared<TwoGroupProvider>();
  const PlanContext ctx = context(2);
  const auto stages = make_stages(ctx, {{attn(), nullptr, {.fusions = provider}}, {dense(), nullptr, {.fusions = provider}}},
                                  {.following = attn()});
  const BoundPath& ffn = stages[1].plan().path(kOrdinary);
  REQUIRE(ffn.ffn_fusions.size() == 1);
  CHECK(ffn.ffn_fusions[0].name == "attn_tp_kernel");
  CHECK(ffn.entry.plain->step.tries_fusions);
  CHECK(ffn.entry.plain->step.all_reduce == SumGroup::ATTN_TP);

  // A read that is not a plain norm gets no fused kernel.
  const auto custom = make_stages(ctx, {{attn()}, {declare_ffn({.read = MHC_READ}), nullptr, {.fusions = provider}}});
  CHECK_FALSE(custom[1].plan().path(kOrdinary).entry.plain->step.tries_fusions);
  CHECK(custom[1].plan().path(kOrdinary).ffn_fusions.empty());
}

TEST_CASE("the producer's update chooses the order; both capabilities are prebound and dispatched") {
  const BoundEntry both = bind_entry(attention_to_full_rows({.plain = true, .non_plain = true}), false, {});
  REQUIRE(both.plain);
  REQUIRE(both.non_plain);
  CHECK(both.plain->step.read == ReadKind::DP_PARTIAL_GATHER);       // the gather completes the sum
  CHECK(both.non_plain->step.read == ReadKind::DP_REPLICATE_GATHER); // reduce, update, then gather
  CHECK(both.non_plain->step.all_reduce == SumGroup::ATTN_TP);
  CHECK(&both.paths_for(true, true) == &*both.plain);
  CHECK(&both.paths_for(false, true) == &*both.non_plain);
  CHECK(&both.paths_for(true, false) == &*both.non_plain);  // no residual: the non-plain path

  // Without a DP gather, only the plain add may use fused kernels.
  EdgeDecl same_rows = attention_to_full_rows({.plain = true, .non_plain = true});
  same_rows.produced.layout = same_rows.residual = Layout{};
  same_rows.residual_to = Layout{};
  const BoundEntry fused = bind_entry(same_rows, false, {});
  CHECK(fused.plain->step.tries_fusions);
  CHECK_FALSE(fused.non_plain->step.tries_fusions);
  CHECK(fused.non_plain->step.all_reduce == SumGroup::ATTN_TP);

  // One bound capability: a different update arriving with a residual is refused.
  const BoundEntry plain_only = bind_entry(attention_to_full_rows({.plain = true}), false, {});
  CHECK_THROWS_WITH_AS(plain_only.paths_for(false, true), "producer update does not match the boundary's capability",
                       UsageError);
  CHECK_THROWS_WITH_AS(BoundEntry{}.paths_for(true, true), "producer update has no bound input path", UsageError);
  CHECK_THROWS_WITH_AS(bind_entry(attention_to_full_rows({}), false, {}),
                       "an arrival must declare its update capabilities", ValueError);
}

TEST_CASE("the next FFN completes a sum left for it once; a completed value is not summed again") {
  const PlanContext ctx = context(2);
  const auto stages = make_stages(ctx, {{attn()}, {dense()}});
  const EntryPaths& paths = *stages[1].plan().path(kOrdinary).entry.plain;
  CHECK(paths.step.all_reduce == SumGroup::ATTN_TP);
  REQUIRE(paths.completed);
  CHECK_FALSE(paths.completed->all_reduce.has_value());
  CHECK(stages[1].plan().path(kOrdinary).entry.input_sum == SumGroup::ATTN_TP);
  // The stack entry prebinds a written step that skips enter.
  const EntryPaths& entry = *stages[0].plan().path(kOrdinary).entry.plain;
  CHECK(entry.step.enters_stack);
  REQUIRE(entry.written);
  CHECK_FALSE(entry.written->enters_stack);
}

TEST_CASE("a written stream's step completes no declared sum") {
  // The input-scattered stack entry owes the embedding's TP sum; a written (complete) stream is
  // only sliced.
  const PlanContext ctx = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.attn_tp_input_scattered = true; });
  const auto stages = make_stages(ctx, {{attn()}, {dense()}});
  const BoundEntry& entry = stages[0].plan().path(BatchVariant::INPUT_SCATTERED).entry;
  REQUIRE(entry.input_sum == SumGroup::TP);
  CHECK(entry.plain->step.pre_move == PreMove::TP_REDUCE_SCATTER);
  REQUIRE(entry.plain->written);
  CHECK(entry.plain->written->pre_move == PreMove::TP_SLICE);
  CHECK_FALSE(entry.plain->written->enters_stack);
}

TEST_CASE("an update that does not outlive its layer, or a non-plain one across pipeline ranks, is refused") {
  const PlanContext ctx = context(2);
  const UpdateFacts short_lived{"SHORT", true, false, false};
  CHECK_THROWS_WITH_AS(make_stages(ctx, {{attn()}, {declare_ffn({.update = short_lived})}}),
                       "a deferred update must guarantee its lifetime across layers", NotSupportedError);
  PlanContext pp = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.pp = 2; });
  const UpdateFacts nonlinear{"POST_NORM", false, false, true};
  CHECK_THROWS_WITH_AS(make_stages(pp, {{attn()}, {declare_ffn({.update = nonlinear})}}),
                       "pipeline boundaries require a plain add or a producer-written residual", NotSupportedError);
  CHECK_NOTHROW(make_stages(pp, {{attn()}, {declare_ffn({.update = MHC_FFN_UPDATE})}}));
}

TEST_CASE("an FFN exit hands its rows on where the residual goes") {
  // The producer's half of the outgoing edge: `need` (rows handed on) must be the residual's rows
  // after the exit, else NotImplementedError(f"{edge=}").
  EdgeDecl exit;
  exit.produced.layout = kDp;
  exit.produced.update = ADD;
  exit.residual = kDp;
  exit.need = StageInput{kDp, {}, NORM_READ};
  exit.residual_to = kDp;
  CHECK(select_output_move(Topology::make(2), kOrdinary, exit) == OutputMove{OutputMoveKind::KEEP});
  exit.residual_to = Layout{};
  CHECK_THROWS_WITH_AS(select_output_move(Topology::make(2), kOrdinary, exit),
                       "edge=produced={ATTN_DP} residual={ATTN_DP} need={ATTN_DP} residual_to={}", NotSupportedError);
  // A bound FFN's exit edge is its stage's: output and residual rows, handed on with the residual.
  const PlanContext ctx = context(4, 2);
  const auto stages = make_stages(ctx, {{attn()}, {dense()}}, {.following = attn()});
  const BoundPath& ffn = stages[1].plan().path(kOrdinary);
  const EdgeDecl bound = exit_edge(ffn.stage);
  CHECK(bound.need->layout == ffn.stage.handed_on);
  CHECK(bound.residual_to == ffn.stage.handed_on);
  CHECK(select_output_move(ctx.topology, kOrdinary, bound) == ffn.output_move);
  CHECK(ffn.output_move.kind == OutputMoveKind::RETURNS_OVER_DP);
}

TEST_CASE("a following local FFN's first fused input certifies the attention's capture") {
  auto provider = std::make_shared<CertifyingProvider>();
  const PlanContext ctx = context(2);
  const auto stages =
      make_stages(ctx, {{attn(), nullptr, {.fusions = provider}}, {dense(), nullptr, {.fusions = provider}}},
                  {.following = attn()});
  const BoundPath& ffn = stages[1].plan().path(kOrdinary);
  REQUIRE(ffn.preserves_residual);
  const ResidualCertificate& certificate = stages[0].plan().path(kOrdinary).capture_preserves_residual;
  REQUIRE(certificate);
  CHECK(certificate(batch(ctx)));                                    // the first candidate's predicate
  CHECK_FALSE(certificate(batch(ctx, {0}, PaddingMode::MAX_LEN)));

  // The FFN described but built elsewhere certifies nothing here; neither does one that gathers
  // over DP (no fused kernel), nor one without fused candidates.
  const auto alone = make_stages(ctx, {{attn(), nullptr, {.fusions = provider}}}, {.following = dense()});
  CHECK_FALSE(alone[0].plan().path(kOrdinary).capture_preserves_residual);
  const auto dp =
      make_stages(context(4, 2), {{attn(), nullptr, {.fusions = provider}}, {dense(), nullptr, {.fusions = provider}}});
  CHECK_FALSE(dp[1].plan().path(kOrdinary).preserves_residual);
  CHECK_FALSE(dp[0].plan().path(kOrdinary).capture_preserves_residual);
  const auto unfused = make_stages(ctx, {{attn()}, {dense()}});
  CHECK_FALSE(unfused[0].plan().path(kOrdinary).capture_preserves_residual);
}

TEST_CASE("the consumer runs its declared read") {
  // Plain norm under DP with attention TP: partial DP gather; a read before the gather replicates.
  CHECK(bind_entry(attention_to_full_rows({.plain = true}), false, {}).plain->step.read == ReadKind::DP_PARTIAL_GATHER);
  ReadFacts early = NORM_READ;
  early.before_gather = true;
  CHECK(bind_entry(attention_to_full_rows({.plain = true}, early), false, {}).plain->step.read ==
        ReadKind::DP_REPLICATE_GATHER);
  CHECK(bind_entry(attention_to_full_rows({.plain = true}, MHC_READ), false, {}).plain->step.read ==
        ReadKind::DP_REPLICATE_GATHER);

  // Input-scattered: the residual joins the partial sum on its slice.
  const PlanContext scattered = context(4, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.attn_tp_input_scattered = true; });
  const auto stages = make_stages(scattered, {{attn()}, {dense()}}, {.following = attn()});
  const BoundPath& ffn = stages[1].plan().path(BatchVariant::INPUT_SCATTERED);
  CHECK(ffn.incoming.residual == kTp);
  CHECK(ffn.entry.plain->step.read == ReadKind::RESIDUAL_JOINS_SUM);
  CHECK(stages[0].plan().path(BatchVariant::INPUT_SCATTERED).entry.plain->step.pre_move == PreMove::TP_REDUCE_SCATTER);

  // Attention carried kernels only for a plain-norm read.
  auto provider = std::make_shared<TwoGroupProvider>();
  const auto plain = make_stages(context(2), {{dense()}, {attn(), nullptr, {.fusions = provider}}},
                                 {.previous = attn().entering_stack()});
  CHECK(plain[1].plan().path(kOrdinary).carried_fusions.size() == 1);
  const auto custom = make_stages(context(2), {{dense()}, {declare_attn({.read = MHC_READ}), nullptr, {.fusions = provider}}},
                                  {.previous = attn().entering_stack()});
  CHECK(custom[1].plan().path(kOrdinary).carried_fusions.empty());
}
