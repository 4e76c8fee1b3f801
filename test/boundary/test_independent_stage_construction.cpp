// §8 test_independent_stage_construction: variant selection never falls back; sequences of any
// stage kinds; sequence and single-stage factories agree; branches; replicated tails; mixers.
#include <doctest/doctest.h>

#include <string>

#include "seam/errors.h"
#include "runtime/boundary/tbo.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

TEST_CASE("an active variant without a bound path never falls back") {
  const PlanContext ctx = context(2);
  const auto stages = make_stages(ctx, {{attn()}, {dense()}}, {.terminal = true});
  CHECK_FALSE(stages[1].plan().has_path(BatchVariant::CONTEXT_PARALLEL));
  CHECK_THROWS_WITH_AS(stages[1].plan().path(BatchVariant::CONTEXT_PARALLEL),
                       "no stage boundary path for the active CONTEXT_PARALLEL batch", NotSupportedError);
  CHECK_THROWS_WITH_AS(stages[1].decide_ffn_exit(batch(ctx, PaddingMode::MAX_LEN, BatchVariant::INPUT_SCATTERED)),
                       "no stage boundary path for the active INPUT_SCATTERED batch", NotSupportedError);
}

TEST_CASE("sequences of 1-4 stages of any kinds enter once, end once and agree on every edge") {
  const char kinds[] = {'A', 'F', 'M', 'E'};
  for (int tp : {1, 2, 4})
    for (int length = 1; length <= 4; ++length)
      for (int code = 0; code < (1 << (2 * length)); ++code) {
        std::string pattern;
        for (int i = 0; i < length; ++i) pattern += kinds[(code >> (2 * i)) & 3];
        CAPTURE(pattern);
        CAPTURE(tp);
        const PlanContext ctx = context(tp);
        std::vector<StageSpec> specs;
        for (const auto& d : declarations(pattern)) specs.push_back({d});
        const auto stages = make_stages(ctx, specs, {.terminal = true});
        REQUIRE(stages.size() == pattern.size());
        for (size_t i = 0; i < stages.size(); ++i) {
          CHECK(stages[i].plan().enters_stack() == (i == 0));
          CHECK(stages[i].plan().terminal() == (i + 1 == stages.size()));
        }
        CHECK(edges_agree(stages));
        // Built as independent layers, every stage binds exactly what the sequence bound.
        const auto independent = independent_stages(ctx, declarations(pattern));
        for (size_t i = 0; i < stages.size(); ++i) {
          const BoundPath& a = stages[i].plan().path(BatchVariant::ORDINARY);
          const BoundPath& b = independent[i].plan().path(BatchVariant::ORDINARY);
          CHECK(a.incoming == b.incoming);
          CHECK(a.outgoing == b.outgoing);
          CHECK(a.entry.plain->step == b.entry.plain->step);
        }
      }
}

TEST_CASE("sequence and single-stage factories agree on terminal placement and edges") {
  for (int dp : {1, 2})
    for (int attn_tp : {1, 2}) {
      CAPTURE(dp);
      CAPTURE(attn_tp);
      const PlanContext ctx = context(dp * attn_tp, dp);
      const int layers = 3;
      std::vector<StageBoundary> sequence, single;
      std::optional<StageDeclaration> previous;
      for (int layer = 0; layer < layers; ++layer) {
        const bool last = layer == layers - 1;
        auto pair = make_stages(ctx, {{attn()}, {dense()}}, {.previous = previous, .terminal = last});
        // The same layer from the single-stage factories, each declaration carrying its source.
        const StageDeclaration a = previous ? attn().with_previous(*previous) : attn().entering_stack();
        const StageDeclaration f = last ? dense().with_previous(a).as_terminal() : dense().with_previous(a);
        single.push_back(make_attn_stage(ctx, {a}, f));
        single.push_back(make_ffn_stage(ctx, {f}));
        previous = f;
        for (auto& s : pair) sequence.push_back(std::move(s));
      }
      REQUIRE(sequence.size() == single.size());
      for (size_t i = 0; i < sequence.size(); ++i) {
        CHECK(sequence[i].plan().terminal() == single[i].plan().terminal());
        CHECK(sequence[i].declaration() == single[i].declaration());
        const BoundPath& a = sequence[i].plan().path(BatchVariant::ORDINARY);
        const BoundPath& b = single[i].plan().path(BatchVariant::ORDINARY);
        CHECK(a.incoming == b.incoming);
        CHECK(a.outgoing.same_producer_half(b.outgoing));
      }
      CHECK(single.back().plan().terminal());
      CHECK(edges_agree(sequence));
    }
}

TEST_CASE("a prepared branch keeps its source's lineage and rows") {
  const PlanContext ctx = context(4, 2);
  const StageDeclaration source = moe().with_previous(attn().entering_stack());
  const auto branch = make_stages(ctx, {{dense()}, {attn()}, {dense()}}, {.prepared_from = source});
  const StagePlan& first = branch[0].plan();
  CHECK(first.is_prepared_branch());
  CHECK(*first.declaration().prepared_from() == source);
  CHECK(branch[1].declaration().previous()->prepared_from() != nullptr);
  // The branch input arrives complete on the rows the source read, with the source's residual.
  const BoundPath& p = first.path(BatchVariant::ORDINARY);
  const StageInput source_input = resolve_input(ctx, BatchVariant::ORDINARY, source);
  CHECK(p.incoming.produced.layout == source_input.layout);
  CHECK_FALSE(p.incoming.produced.group.has_value());
  CHECK(p.incoming.residual == consumer_residual(ctx, BatchVariant::ORDINARY, source,
                                                 arrival_at(ctx, BatchVariant::ORDINARY, source)));
  CHECK(edges_agree(branch));
  // The source's own edges are unchanged by the branch.
  const auto source_stage = make_ffn_stage(ctx, {source});
  CHECK(source_stage.plan().path(BatchVariant::ORDINARY).incoming ==
        make_edge(ctx, BatchVariant::ORDINARY, source.previous(), &source));
}

TEST_CASE("a replicated tail is never deferred but keeps its reduce-scatter permissions") {
  for (auto reduction : {ProducerReduction::SCOPED, ProducerReduction::LOCAL_TAIL}) {
    const PlanContext ctx = context(4, 2);
    const auto stages =
        make_stages(ctx, {{attn()}, {declare_ffn({.reduction = reduction})}}, {.following = attn()});
    const StageOutput& out = stages[1].plan().path(BatchVariant::ORDINARY).stage.output;
    CHECK(out.leaves_for_next_layer == (reduction != ProducerReduction::LOCAL_TAIL));
    CHECK(out.leaves_for_reduce_scatter);
    CHECK(out.leaves_for_reduce_scatterv);
  }
}

TEST_CASE("a mixer always leaves its sum to a following FFN and may defer it to a following mixer") {
  const PlanContext ctx = context(2);
  const auto before_ffn = make_stages(ctx, {{mixer()}, {dense()}}, {.terminal = true});
  const StageOutput& to_ffn = before_ffn[0].plan().path(BatchVariant::ORDINARY).stage.output;
  CHECK(to_ffn.always_leaves);
  CHECK_FALSE(to_ffn.leaves_for_next_layer);
  CHECK(before_ffn[1].plan().path(BatchVariant::ORDINARY).incoming.produced.group == SumGroup::ATTN_TP);

  const auto before_mixer = make_stages(ctx, {{mixer()}, {mixer()}}, {.terminal = true});
  const StageOutput& to_mixer = before_mixer[0].plan().path(BatchVariant::ORDINARY).stage.output;
  CHECK_FALSE(to_mixer.always_leaves);
  CHECK(to_mixer.leaves_for_next_layer);
  CHECK(before_mixer[1].plan().path(BatchVariant::ORDINARY).incoming.produced.group == SumGroup::ATTN_TP);
  // With no following stage the mixer completes its own sum in compute.
  const StageOutput& last = before_mixer[1].plan().path(BatchVariant::ORDINARY).stage.output;
  CHECK_FALSE(last.always_leaves);
  CHECK_FALSE(last.leaves_for_next_layer);
}

TEST_CASE("TBO: a dense layer before the split hands on attention rows only when TBO is on") {
  for (bool tbo : {false, true}) {
    const PlanContext ctx = context(2, 1, ReductionPolicy::RS_RSV, [&](Topology& t) {
      t.moe_dense_tp = 1;  // dense FFNs fully DP: they run on this rank's own rows
      t.two_batch_overlap = tbo;
    });
    const auto stages = make_stages(ctx, {{attn()}, {dense(/*next_sparse=*/true)}}, {.following = attn()});
    const ResolvedStage& ffn = stages[1].plan().path(BatchVariant::ORDINARY).stage;
    const RowLayouts rows = row_layouts(ctx.topology, BatchVariant::ORDINARY);
    CHECK(ffn.input.layout == rows.local);
    CHECK(ffn.handed_on == (tbo ? rows.attention : rows.local));
    // The split moves: attention rows split as they are; slices are gathered first.
    CHECK(tbo_split_move(ctx.topology, BatchVariant::ORDINARY, ffn.handed_on) ==
          (tbo ? TboSplitMove::KEEP : TboSplitMove::GATHER_THEN_SLICE));
  }
  CHECK_THROWS_WITH_AS(tbo_split_move(Topology::make(4, 2), BatchVariant::ORDINARY, Layout{}), "layer_input_rows={}",
                       NotSupportedError);
}
