// Long stacks (a 20,000-stage hybrid model): construction connects and resolves stage by stage
// without recursing down the source chain, so neither the stack depth nor a long run of
// consecutive mixers overflows the stack or walks the chain once per stage. This test asserts the
// plans; the time per stage is measured by plan_construction_perf (a benchmark).
#include <doctest/doctest.h>

#include <string>

#include "runtime/boundary/introspection.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
constexpr int kStages = 20000;

std::vector<StageSpec> specs_of(const std::string& pattern) {
  std::vector<StageSpec> specs;
  for (const StageDeclaration& d : declarations(pattern)) specs.push_back({d});
  return specs;
}

std::string repeated(const std::string& period, int stages) {
  std::string s;
  while (static_cast<int>(s.size()) < stages) s += period;
  return s.substr(0, static_cast<size_t>(stages));
}
}  // namespace

TEST_CASE("20,000 consecutive mixers plan like a short run of mixers") {
  const PlanContext ctx = context(4);
  const auto stages = make_stages(ctx, specs_of(repeated("M", kStages)), {.terminal = true});
  REQUIRE(stages.size() == kStages);
  const auto shorter = make_stages(ctx, specs_of("MMMM"), {.terminal = true});
  // Past the first stage a mixer's plan does not depend on how many mixers came before it.
  CHECK(describe_plan(stages[1].plan()) == describe_plan(shorter[1].plan()));
  CHECK(describe_plan(stages[kStages / 2].plan()) == describe_plan(shorter[2].plan()));
  CHECK(describe_plan(stages.back().plan()) == describe_plan(shorter.back().plan()));
  CHECK(edges_agree(stages));
}

TEST_CASE("a 20,000-stage AFAF... stack plans like a short one") {
  const PlanContext ctx = context(8, 2, ReductionPolicy::RS_RSV);
  const auto stages = make_stages(ctx, specs_of(repeated("AF", kStages)), {.terminal = true});
  REQUIRE(stages.size() == kStages);
  const auto shorter = make_stages(ctx, specs_of("AFAFAF"), {.terminal = true});
  CHECK(describe_plan(stages[2].plan()) == describe_plan(shorter[2].plan()));
  CHECK(describe_plan(stages[kStages / 2 + 1].plan()) == describe_plan(shorter[3].plan()));
  CHECK(describe_plan(stages.back().plan()) == describe_plan(shorter.back().plan()));
  CHECK(edges_agree(stages));
}

TEST_CASE("a mixer at the end of a 20,000-stage chain builds alone against its neighbours") {
  const PlanContext ctx = context(4);
  std::vector<StageDeclaration> connected{mixer().entering_stack()};
  for (int i = 1; i < kStages; ++i) connected.push_back(mixer().with_previous(connected.back()));
  // A single-stage build compares the following declaration's producer with this one, source
  // chains included, and resolves what arrives through every mixer before it.
  const StageDeclaration following = mixer().with_previous(connected.back());
  const StageBoundary last = make_attn_stage(ctx, {connected.back()}, following);
  const auto shorter = make_stages(ctx, specs_of("MMMM"), {.following = mixer()});
  CHECK(describe_plan(last.plan()) == describe_plan(shorter.back().plan()));
  CHECK(connected.back() == mixer().with_previous(connected[kStages - 2]));
  CHECK_FALSE(connected.back() == mixer().with_previous(connected[kStages - 3]));
}

TEST_CASE("a 200,000-deep declaration chain is released without recursion") {
  std::optional<StageDeclaration> last = mixer().entering_stack();
  for (int i = 1; i < 200000; ++i) last = mixer().with_previous(*last);
  CHECK(last->previous() != nullptr);
  last.reset();  // the chain's release must not recurse once per declaration
  CHECK_FALSE(last.has_value());
}
