// Construction cost: a 64-layer decoder (128 stages, every variant the topology supports) is
// planned in milliseconds, and the per-batch questions (path lookup, exit decision) are cheap.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
using Clock = std::chrono::steady_clock;

// Per-layer construction, as a model's layers do it: each layer gets the previous layer's FFN.
std::vector<StageBoundary> build_64_layers(const PlanContext& ctx, const StageDeclaration& ffn) {
  std::vector<StageBoundary> stages;
  std::optional<StageDeclaration> previous;
  for (int layer = 0; layer < 64; ++layer) {
    auto pair = make_stages(ctx, {{attn()}, {ffn}}, {.previous = previous, .terminal = layer == 63});
    previous = pair[1].declaration();
    for (auto& s : pair) stages.push_back(std::move(s));
  }
  return stages;
}
}  // namespace

TEST_CASE("a 64-layer plan is built in milliseconds") {
  struct Case {
    const char* name;
    PlanContext ctx;
    StageDeclaration ffn;
  };
  const Case cases[] = {
      {"dense tp=8 rs+rsv with the input-scattered variant", context(8, 1, ReductionPolicy::RS_RSV,
                                                              [](Topology& t) { t.attn_tp_input_scattered = true; }),
       dense()},
      {"MoE tp=8 attn_dp=4 rs+rsv", context(8, 4), moe()},
  };
  for (const Case& c : cases) {
    build_64_layers(c.ctx, c.ffn);  // warm caches and the allocator
    const auto start = Clock::now();
    const int repeats = 5;
    size_t stages = 0;
    for (int i = 0; i < repeats; ++i) stages = build_64_layers(c.ctx, c.ffn).size();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / repeats;
    MESSAGE(std::string(c.name) << ": " << stages << " stages planned in " << ms << " ms");
    CHECK(stages == 128);
    CHECK(ms < 50.0);
  }
}

TEST_CASE("per-batch decisions take well under a microsecond") {
  const PlanContext ctx = context(8, 4);
  const auto stages = build_64_layers(ctx, dense());
  const BatchFacts b = batch(ctx, {5, 8, 0, 3}, PaddingMode::SUM_LEN);
  const int rounds = 2000;
  int deferred = 0;
  const auto start = Clock::now();
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 1; i < stages.size(); i += 2) {
      ExitFlags flags;
      FfnExit exit = stages[i].ffn_exit(flags, b);
      deferred += exit.decision().completion != FfnCompletion::COMPLETE_NOW;
    }
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / (rounds * 64.0);
  MESSAGE("FFN exit decision + scoped flags: " << ns << " ns per boundary");
  CHECK(deferred == rounds * 63);  // every FFN but the last defers its all-reduce + DP scatter
  CHECK(ns < 1000.0);
}
