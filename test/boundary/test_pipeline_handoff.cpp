// §3.5 / §2.6 row 14: an FFN handing off to another pipeline rank always returns attention rows —
// its exit writes the update into the residual slice and gathers it back (the stream arrives
// written), whether the cut comes right after the FFN or after the attention stages that follow it
// (they leave the residual where the FFN put it). Each rank is built on its own, told only its
// neighbours, as pipeline ranks are.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "seam/errors.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {

// Dense FFNs fully data-parallel: each rank computes on its own attention-TP slice (§2.6 row 14).
PlanContext dense_dp_context(int tp, int attn_dp = 1) {
  return context(tp, attn_dp, ReductionPolicy::RS_RSV, [](Topology& t) { t.moe_dense_tp = 1; });
}

// The stack `pattern` cut after each stage index in `cuts`, one make_stages() per pipeline rank;
// each cut is described on both sides with before_pipeline_cut().
std::vector<std::vector<StageBoundary>> pipeline(const PlanContext& ctx, std::string_view pattern,
                                                 const std::vector<size_t>& cuts) {
  const auto decls = declarations(pattern);
  std::vector<size_t> ends = cuts;
  ends.push_back(decls.size());
  std::vector<StageDeclaration> connected;
  for (size_t i = 0; i < decls.size(); ++i) {
    connected.push_back(i == 0 ? decls[0].entering_stack() : decls[i].with_previous(connected.back()));
    for (size_t cut : cuts)
      if (i + 1 == cut) connected.back() = connected.back().before_pipeline_cut();
  }
  std::vector<std::vector<StageBoundary>> ranks;
  size_t begin = 0;
  for (size_t end : ends) {
    std::vector<StageSpec> specs;
    for (size_t i = begin; i < end; ++i) specs.push_back({decls[i]});
    StageNeighbours around;
    if (begin > 0) around.previous = connected[begin - 1];
    if (end < decls.size()) around.following = decls[end].with_previous(connected[end - 1]);
    around.terminal = end == decls.size();
    around.hands_off_to_pipeline = end < decls.size();
    ranks.push_back(make_stages(ctx, specs, around));
    begin = end;
  }
  return ranks;
}

std::vector<StageBoundary> flat(const std::vector<std::vector<StageBoundary>>& ranks) {
  std::vector<StageBoundary> out;
  for (const auto& r : ranks) out.insert(out.end(), r.begin(), r.end());
  return out;
}

const BoundPath& ordinary(const StageBoundary& s) { return s.plan().path(BatchVariant::ORDINARY); }

}  // namespace

TEST_CASE("§3.5: an FFN on local rows handing off to another pipeline rank returns attention rows") {
  for (int attn_dp : {1, 2}) {
    CAPTURE(attn_dp);
    const PlanContext ctx = dense_dp_context(4, attn_dp);
    const RowLayouts rows = row_layouts(ctx.topology, BatchVariant::ORDINARY);
    const auto ranks = pipeline(ctx, "AFAF", {2});  // A F | A F
    const BoundPath& sender = ordinary(ranks[0][1]);
    CHECK(sender.stage.output.layout == rows.local);  // compute still runs on this rank's slice
    CHECK(sender.stage.residual == rows.local);
    CHECK(sender.stage.handed_on == rows.attention);
    // §2.6 row 14: the exit updates the residual slice, then gathers it back to attention rows.
    CHECK(sender.output_move.kind == OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER);
    CHECK(sender.outgoing.produced.layout == rows.attention);
    CHECK(sender.outgoing.residual == rows.attention);
    // The receiver reads the stream as written: the hidden states are the residual.
    const BoundPath& receiver = ordinary(ranks[1][0]);
    CHECK(receiver.arrives_written);
    CHECK(receiver.incoming.produced.layout == rows.attention);
    CHECK(receiver.incoming.residual == rows.attention);
    CHECK(receiver.incoming.residual_to == rows.attention);
    CHECK(edges_agree(flat(ranks)));
  }
}

TEST_CASE("§3.5: without a pipeline cut the same FFN hands its slice to the next attention") {
  const PlanContext ctx = dense_dp_context(4);
  const RowLayouts rows = row_layouts(ctx.topology, BatchVariant::ORDINARY);
  const auto ranks = pipeline(ctx, "AFAF", {});
  const BoundPath& local = ordinary(ranks[0][1]);
  CHECK(local.stage.handed_on == rows.local);
  CHECK(local.output_move.kind == OutputMoveKind::KEEP);
  CHECK_FALSE(ordinary(ranks[0][2]).arrives_written);
  CHECK(ordinary(ranks[0][2]).incoming.residual == rows.local);
}

TEST_CASE("§3.5: a pipeline cut after an attention: the FFN before it hands off attention rows") {
  for (int attn_dp : {1, 2}) {
    CAPTURE(attn_dp);
    const PlanContext ctx = dense_dp_context(4, attn_dp);
    const RowLayouts rows = row_layouts(ctx.topology, BatchVariant::ORDINARY);
    const auto ranks = pipeline(ctx, "AFAF", {3});  // A F A | F
    const BoundPath& ffn = ordinary(ranks[0][1]);
    CHECK(ffn.stage.handed_on == rows.attention);
    CHECK(ffn.output_move.kind == OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER);
    // The attention before the cut reads attention rows and leaves the residual on them.
    const BoundPath& attention = ordinary(ranks[0][2]);
    CHECK(attention.incoming.residual == rows.attention);
    CHECK(attention.stage.residual == rows.attention);
    CHECK(attention.outgoing.produced.layout == rows.attention);
    CHECK(attention.outgoing.residual == rows.attention);
    // The receiving FFN sees the residual where the sender left it: beside the attention partial.
    const BoundPath& receiver = ordinary(ranks[1][0]);
    CHECK(receiver.incoming.produced.layout == rows.attention);
    CHECK(receiver.incoming.produced.group == SumGroup::ATTN_TP);
    CHECK(receiver.incoming.residual == rows.attention);
    CHECK(edges_agree(flat(ranks)));
  }
}

TEST_CASE("§3.5: a MoE on its own rows (all-to-all backend) handing off to another pipeline rank returns attention rows") {
  const PlanContext ctx = context(2, 1, ReductionPolicy::RS_RSV, [](Topology& t) { t.moe_a2a_backend = true; });
  const RowLayouts rows = row_layouts(ctx.topology, BatchVariant::ORDINARY);
  const auto ranks = pipeline(ctx, "AEAE", {2});
  CHECK(ordinary(ranks[0][1]).stage.output.layout == rows.local);
  CHECK(ordinary(ranks[0][1]).stage.handed_on == rows.attention);
  CHECK(ordinary(ranks[0][1]).output_move.kind == OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER);
  CHECK(ordinary(ranks[1][0]).arrives_written);
  CHECK(edges_agree(flat(ranks)));
}

TEST_CASE("§3.5: an FFN on full rows already hands off attention rows: the pipeline cut changes nothing") {
  const PlanContext ctx = context(4, 2);
  const auto cut = pipeline(ctx, "AFAF", {2});
  const auto whole = pipeline(ctx, "AFAF", {});
  const BoundPath& a = ordinary(cut[0][1]);
  const BoundPath& b = ordinary(whole[0][1]);
  CHECK(a.stage.handed_on == b.stage.handed_on);
  CHECK(a.stage.handed_on == row_layouts(ctx.topology, BatchVariant::ORDINARY).attention);
  CHECK(a.output_move == b.output_move);
  CHECK(a.output_move.kind == OutputMoveKind::RETURNS_OVER_DP);
  CHECK(a.ffn_exit.leaves_for_next_layer == b.ffn_exit.leaves_for_next_layer);
  CHECK(edges_agree(flat(cut)));
}

TEST_CASE("§3.5: before_pipeline_cut marks the FFN whose rows cross the cut, and only it") {
  const auto decls = declarations("FAA");
  const StageDeclaration f = decls[0].entering_stack();
  const StageDeclaration a1 = decls[1].with_previous(f);
  const StageDeclaration a2 = decls[2].with_previous(a1);
  const StageDeclaration marked = a2.before_pipeline_cut();
  CHECK_FALSE(marked.hands_off_to_pipeline);
  REQUIRE(marked.previous());
  CHECK_FALSE(marked.previous()->hands_off_to_pipeline);
  REQUIRE(marked.previous()->previous());
  CHECK(marked.previous()->previous()->hands_off_to_pipeline);
  CHECK_FALSE(f.hands_off_to_pipeline);  // the original chain is left alone
  CHECK_FALSE(marked == a2);             // a receiver that describes the cut otherwise is told apart
  CHECK(f.before_pipeline_cut().hands_off_to_pipeline);
  // Attention stages from the stack entry: no FFN's rows cross, nothing changes.
  const StageDeclaration entry = attn().entering_stack();
  CHECK(entry.before_pipeline_cut() == entry);
}

TEST_CASE("§3.5: a terminal stage hands off to no pipeline rank") {
  const PlanContext ctx = dense_dp_context(2);
  CHECK_THROWS_WITH_AS(make_stages(ctx, {{attn()}, {dense()}}, {.terminal = true, .hands_off_to_pipeline = true}),
                       "a terminal stage ends the layer stack: it hands off to no pipeline rank", ValueError);
}

TEST_CASE("§3.5: pipeline cuts after every stage of an interleaved stack: neighbours agree on every edge") {
  for (const char* pattern : {"AFAEAF", "MMFMEM"}) {
    CAPTURE(pattern);
    const PlanContext ctx = dense_dp_context(4, 2);
    const auto ranks = pipeline(ctx, pattern, {1, 2, 3, 4, 5});
    CHECK(edges_agree(flat(ranks)));
    for (const auto& rank : ranks) {
      const StageBoundary& s = rank.front();
      if (s.kind() == StageKind::FFN) continue;
      // Every attention on its own rank reads the residual on attention rows.
      CHECK(ordinary(s).incoming.residual == row_layouts(ctx.topology, BatchVariant::ORDINARY).attention);
    }
  }
}
