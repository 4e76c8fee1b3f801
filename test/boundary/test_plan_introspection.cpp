// Introspection: every bound path describes itself in one line that names the collective and
// where it runs, so a plan can be checked against §2.6 by reading it.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "runtime/boundary/introspection.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
std::vector<std::string> lines_of(const std::vector<StageBoundary>& stages) {
  std::vector<std::string> lines;
  for (const auto& s : stages)
    for (auto& line : describe_plan(s.plan())) lines.push_back(std::move(line));
  return lines;
}
bool has(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}
}  // namespace

TEST_CASE("RSv topology: the FFN's sum becomes a deferred reduce_scatterv") {
  const PlanContext ctx = context(4, 4, ReductionPolicy::RS_RSV, [](Topology& t) {
    t.moe_ep = 4;
    t.moe_tp = 1;
  });
  const auto lines = lines_of(make_stages(ctx, {{attn()}, {dense()}, {attn()}, {dense()}}, {.terminal = true}));
  CHECK(has(lines, "ffn->attn [ORDINARY]: TP reduce_scatterv at next input (deferred)"));
  CHECK(has(lines, "ffn->norm [ORDINARY]: TP reduce_scatterv at exit"));
  CHECK(has(lines, "attn->ffn [ORDINARY] input: update+read, DP gather (replicate)"));
}

TEST_CASE("attention TP with DP: partial DP gather; RS or deferred all-reduce + scatter by padding") {
  const auto lines = lines_of(make_stages(context(4, 2), {{attn()}, {dense()}}, {.following = attn()}));
  CHECK(has(lines, "embed->attn [ORDINARY] input: enter, update+read"));
  CHECK(has(lines, "attn->ffn [ORDINARY]: ATTN_TP partial sum left to next input (declared)"));
  CHECK(has(lines, "attn->ffn [ORDINARY] input: DP gather (partial, completes ATTN_TP), read"));
  CHECK(has(lines, "ffn->attn [ORDINARY]: MAX_LEN: TP reduce_scatter at next input (deferred); "
                   "SUM_LEN: TP all_reduce + DP scatter at next input (deferred)"));
}

TEST_CASE("no DP: the FFN's all-reduce moves to the next input; the last layer sums in compute") {
  const auto lines = lines_of(make_stages(context(2), {{attn()}, {dense()}, {attn()}, {dense()}}, {.terminal = true}));
  CHECK(has(lines, "attn->ffn [ORDINARY] input: ATTN_TP all_reduce (fused candidates first), update+read"));
  CHECK(has(lines, "ffn->attn [ORDINARY]: TP all_reduce at next input (deferred)"));
  CHECK(has(lines, "ffn->norm [ORDINARY]: TP all_reduce in compute"));
}
