// The public planner facade (seam/boundary.h) on one rank: a two-layer attention + FFN stack run
// through make_stages / prepare / finish / exit / residual::norm gives the rows the same stack gives
// through the internal StageRunner (as tools/sim/driver.cpp drives it), bit for bit, and a
// hand-computed reference; what v1 does not run is refused with NotSupportedError, and pipeline
// calls where no pipeline cut is are refused before they change the stream.
#include <cmath>
#include <cstdint>
#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <vector>

#include "runtime/boundary/factories.h"
#include "runtime/boundary/rows/host_fusion.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "seam/boundary.h"
#include "examples/cpp_decoder/model.h"
#include "seam/errors.h"

using namespace seam;
namespace sb = seam::boundary;

namespace {

using namespace cpp_decoder;

constexpr int64_t kTokens = 3;
constexpr float kEps = 1e-6f;
// The stack's input rows, away from zero.
const Rows kEmbedding = random_rows(7, kTokens * kHidden, 1.0f);

Rows copy_rows(const Tensor& y) {
  REQUIRE(y.rows == kTokens);
  REQUIRE(y.cols == kHidden);
  Rows out(static_cast<size_t>(kTokens * kHidden));
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t c = 0; c < kHidden; ++c)
      out[static_cast<size_t>(t * kHidden + c)] = static_cast<const float*>(y.data)[t * y.row_stride + c];
  return out;
}

// The facade, as an engine writes it (the guide's Qwen3 fragment).
Rows run_facade(Model& m) {
  sb::Groups groups;
  std::vector<sb::Norm> norms;
  for (int s = 0; s <= 2 * kLayers; ++s) norms.emplace_back(m.norm_weight(s), kEps);
  std::vector<sb::Stage> stages;
  for (int l = 0; l < kLayers; ++l) {
    sb::StageNeighbours around{.previous = l ? std::optional(sb::declare_ffn()) : std::nullopt,
                               .terminal = l == kLayers - 1};
    for (sb::Stage& s : sb::make_stages(groups, {{sb::declare_attn(), &norms[static_cast<size_t>(2 * l)]},
                                                 {sb::declare_ffn(), &norms[static_cast<size_t>(2 * l + 1)]}},
                                        around))
      stages.push_back(std::move(s));
  }
  CHECK(stages[0].finishes_directly());
  CHECK_FALSE(stages[1].finishes_directly());
  CHECK(stages[1].kind() == sb::StageKind::FFN);
  CHECK(stages.back().declaration().terminal);
  CHECK_FALSE(stages[1].describe().empty());

  const int64_t tokens[] = {kTokens};
  sb::Forward forward(groups, groups.batch(tokens));
  CHECK(forward.local_rows() == kTokens);
  std::vector<Rows> outputs(2 * kLayers, Rows(static_cast<size_t>(kTokens * kHidden)));
  Rows embedding = kEmbedding;  // the stream's residual: the stack writes it in place
  residual::start(forward);
  sb::LayerOutput h(view(embedding, kTokens, kHidden));
  for (int l = 0; l < kLayers; ++l) {
    Rows& attn_out = outputs[static_cast<size_t>(2 * l)];
    Rows& ffn_out = outputs[static_cast<size_t>(2 * l + 1)];
    Tensor x = stages[static_cast<size_t>(2 * l)].prepare(h, forward).values;
    m.attention(l, x, attn_out);
    h = stages[static_cast<size_t>(2 * l)].finish(view(attn_out, kTokens, kHidden), forward);
    x = stages[static_cast<size_t>(2 * l + 1)].prepare(h, forward).values;
    sb::StageExit exit = stages[static_cast<size_t>(2 * l + 1)].exit(forward);
    CHECK(forward.exit_flags() == exit.flags());
    m.ffn(l, x, ffn_out);
    h = exit.finish(view(ffn_out, kTokens, kHidden));
  }
  Rows captured;
  const residual::NormOptions options{.capture = [&](const Tensor& r, bool) { captured = copy_rows(r); }};
  const Rows y = copy_rows(residual::norm(h, forward, norms.back(), options));
  CHECK(captured.size() == y.size());
  CHECK(groups.traffic().empty());  // one rank: nothing communicates
  return y;
}

// The same stack through the internal planner and StageRunner.
Rows run_internal(Model& m) {
  using namespace seam::boundary;
  const PlanContext ctx{Topology::make(1), ReductionPolicy::RS_RSV};
  rows::ProcessGroups groups(ctx.topology);
  auto fusion = std::make_shared<rows::HostAllReduceNormFusion>(groups);
  std::vector<std::unique_ptr<residual::RmsNorm>> norms;
  for (int s = 0; s <= 2 * kLayers; ++s) norms.push_back(std::make_unique<residual::RmsNorm>(m.norm_weight(s), kEps));
  std::vector<StageBoundary> stages;
  for (int l = 0; l < kLayers; ++l) {
    StageNeighbours around{.previous = l ? std::optional(declare_ffn()) : std::nullopt, .terminal = l == kLayers - 1};
    for (StageBoundary& s : make_stages(ctx,
                                        {{declare_attn(), norms[static_cast<size_t>(2 * l)].get(), {.fusions = fusion}},
                                         {declare_ffn(), norms[static_cast<size_t>(2 * l + 1)].get(), {.fusions = fusion}}},
                                        around))
      stages.push_back(std::move(s));
  }
  std::vector<std::unique_ptr<StageRunner>> runners;
  for (size_t i = 0; i < stages.size(); ++i)
    runners.push_back(std::make_unique<StageRunner>(
        stages[i], groups, *norms[i], i % 2 ? residual::norm_read() : residual::norm_quant_read(), residual::add_update()));

  residual::ForwardBatch batch;
  const int64_t tokens[] = {kTokens};
  batch.facts = BatchFacts::make(tokens, 0, 1, PaddingMode::MAX_LEN);
  std::vector<Rows> outputs(2 * kLayers, Rows(static_cast<size_t>(kTokens * kHidden)));
  Rows embedding = kEmbedding;
  residual::start(batch);
  residual::LayerOutput h(view(embedding, kTokens, kHidden));
  for (int l = 0; l < kLayers; ++l) {
    Rows& attn_out = outputs[static_cast<size_t>(2 * l)];
    Rows& ffn_out = outputs[static_cast<size_t>(2 * l + 1)];
    Tensor x = runners[static_cast<size_t>(2 * l)]->prepare(h, batch).values;
    m.attention(l, x, attn_out);
    h = runners[static_cast<size_t>(2 * l)]->finish(view(attn_out, kTokens, kHidden), batch);
    x = runners[static_cast<size_t>(2 * l + 1)]->prepare(h, batch).values;
    auto exit = runners[static_cast<size_t>(2 * l + 1)]->exit(batch);
    m.ffn(l, x, ffn_out);
    h = exit.finish(view(ffn_out, kTokens, kHidden));
  }
  return copy_rows(residual::norm(h, batch, *norms.back()));
}

// The reference by hand: residual += output; input = RMSNorm(residual) · w (sums in double).
Rows rms_norm(const Rows& x, const Rows& w) {
  Rows y(x.size());
  for (int64_t t = 0; t < kTokens; ++t) {
    double squares = 0;
    for (int64_t c = 0; c < kHidden; ++c) squares += double(x[static_cast<size_t>(t * kHidden + c)]) * x[static_cast<size_t>(t * kHidden + c)];
    const double scale = 1.0 / std::sqrt(squares / kHidden + kEps);
    for (int64_t c = 0; c < kHidden; ++c)
      y[static_cast<size_t>(t * kHidden + c)] =
          static_cast<float>(x[static_cast<size_t>(t * kHidden + c)] * scale * w[static_cast<size_t>(c)]);
  }
  return y;
}
Rows run_by_hand(Model& m) {
  Rows residual = kEmbedding, out(residual.size());
  for (int l = 0; l < kLayers; ++l) {
    Rows x = rms_norm(residual, m.norms[static_cast<size_t>(2 * l)]);
    m.attention(l, view(x, kTokens, kHidden), out);
    for (size_t i = 0; i < out.size(); ++i) residual[i] += out[i];
    x = rms_norm(residual, m.norms[static_cast<size_t>(2 * l + 1)]);
    m.ffn(l, view(x, kTokens, kHidden), out);
    for (size_t i = 0; i < out.size(); ++i) residual[i] += out[i];
  }
  return rms_norm(residual, m.norms.back());
}

}  // namespace

TEST_CASE("facade: a 2-layer stack on one rank equals the internal runner and the hand reference") {
  Model m;
  const Rows facade = run_facade(m), internal = run_internal(m), hand = run_by_hand(m);
  REQUIRE(facade.size() == internal.size());
  double max_error = 0;
  int64_t different = 0;
  for (size_t i = 0; i < facade.size(); ++i) {
    different += facade[i] != internal[i];
    max_error = std::fmax(max_error, std::fabs(double(facade[i]) - hand[i]) / (1.0 + std::fabs(double(hand[i]))));
  }
  CHECK(different == 0);
  CHECK(max_error < 1e-5);
  // The values are real: normalised rows of order one, not zeros.
  double sum_squares = 0;
  for (float v : facade) sum_squares += double(v) * v;
  CHECK(sum_squares / static_cast<double>(facade.size()) > 0.1);
}

TEST_CASE("facade: what v1 does not run is refused") {
  Model m;
  sb::Groups groups;
  sb::Norm norm(m.norm_weight(0), kEps);
  CHECK(norm.hidden() == kHidden);
  sb::AttnOptions mhc{.read = sb::MHC_READ, .update = sb::MHC_ATTENTION_UPDATE};
  CHECK_THROWS_AS(sb::make_stages(groups, {{sb::declare_attn(mhc), &norm}}), NotSupportedError);
  CHECK_THROWS_AS(sb::make_stages(groups, {{sb::declare_ffn(), nullptr}}), ValueError);
  CHECK_THROWS_AS(sb::make_stages(groups, {{sb::declare_ffn(), &norm}}, {}, {.policy = sb::ReductionPolicy::AUTO}),
                  ValueError);
  sb::ParallelConfig pipeline;
  pipeline.pp = 2;
  CHECK_THROWS_AS(sb::Groups{pipeline}, ValueError);  // a single-rank world has pp 1
  CHECK_THROWS_AS(sb::Groups{sb::ParallelConfig::make(2)}, ValueError);  // a single-rank world has tp 1
  const int64_t two_replicas[] = {1, 1};
  CHECK_THROWS_AS(groups.batch(two_replicas), ValueError);
}

TEST_CASE("facade: pipeline calls where no pipeline cut is are refused before they change anything") {
  Model m;
  sb::Groups groups;
  sb::Norm attn_norm(m.norm_weight(0), kEps), ffn_norm(m.norm_weight(1), kEps), final_norm(m.norm_weight(2), kEps);
  std::vector<sb::Stage> stages =
      sb::make_stages(groups, {{sb::declare_attn(), &attn_norm}, {sb::declare_ffn(), &ffn_norm}}, {.terminal = true});
  const int64_t tokens[] = {kTokens};
  sb::Forward forward(groups, groups.batch(tokens));
  // The stack's first stage has no pipeline cut before it.
  CHECK_THROWS_AS(stages[0].from_pp(forward), UsageError);
  // A partition after a cut, on the only pipeline stage: nothing to receive from.
  std::vector<sb::Stage> after_cut = sb::make_stages(
      groups, {{sb::declare_attn(), &attn_norm}}, {.previous = sb::declare_ffn().before_pipeline_cut()});
  CHECK_THROWS_AS(after_cut[0].from_pp(forward), ValueError);
  // A hand-off on the last pipeline stage is refused with the stream intact: the stack still runs.
  Rows embedding = kEmbedding, attn_out(embedding.size()), ffn_out(embedding.size());
  residual::start(forward);
  sb::LayerOutput h(view(embedding, kTokens, kHidden));
  CHECK_THROWS_AS(residual::to_pp(h, forward), ValueError);
  Tensor x = stages[0].prepare(h, forward).values;
  m.attention(0, x, attn_out);
  h = stages[0].finish(view(attn_out, kTokens, kHidden), forward);
  x = stages[1].prepare(h, forward).values;
  sb::StageExit exit = stages[1].exit(forward);
  m.ffn(0, x, ffn_out);
  h = exit.finish(view(ffn_out, kTokens, kHidden));
  const Rows y = copy_rows(residual::norm(h, forward, final_norm));
  double sum_squares = 0;
  for (float v : y) sum_squares += double(v) * v;
  CHECK(sum_squares / static_cast<double>(y.size()) > 0.1);
}
