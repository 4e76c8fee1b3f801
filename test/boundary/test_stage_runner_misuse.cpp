// StageRunner misuse on one rank (§4.7 stage and consumer-step errors): each raises the guide's
// message before touching the stream's work; exit flags are restored when compute throws; branch
// transport on ordinary rows only; what pipeline reception reads from the wire.
#include <cstdint>
#include <doctest/doctest.h>

#include <stdexcept>

#include "seam/errors.h"
#include "runtime/boundary/rows/cp_moves.h"
#include "runtime/boundary/runner.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/post_norm.h"
#include "test/boundary/fixtures.h"

using namespace seam;
using namespace seam::boundary;
using namespace seam::boundary::testing;

namespace {
constexpr int64_t kRows = 2, kHidden = 4;

// One-rank fixtures: an AF stack's runners, a ForwardBatch, and row buffers.
struct World {
  PlanContext ctx = context(1);
  rows::ProcessGroups groups{ctx.topology};
  Buffer weight_storage{kHidden * 4};
  Tensor weight = ones(weight_storage);
  residual::RmsNorm attn_norm{weight, 1e-6f}, ffn_norm{weight, 1e-6f};
  std::vector<StageBoundary> stages = make_stages(ctx, {{attn(), &attn_norm}, {dense(), &ffn_norm}}, {.terminal = true});
  StageRunner attention{stages[0], groups, attn_norm, residual::norm_quant_read(), residual::add_update()};
  StageRunner ffn{stages[1], groups, ffn_norm, residual::norm_read(), residual::add_update()};
  residual::ForwardBatch batch;
  Buffer a{kRows * kHidden * 4}, b{kRows * kHidden * 4};

  World() {
    const int64_t tokens[] = {kRows};
    batch.facts = BatchFacts::make(tokens, 0, 1, PaddingMode::MAX_LEN);
  }
  static Tensor ones(Buffer& storage) {
    const Tensor t = storage.as_tensor(DType::f32, 1, kHidden);
    for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(t.data)[c] = 1.f;
    return t;
  }
  Tensor rows(Buffer& storage, float v) {
    const Tensor t = storage.as_tensor(DType::f32, kRows, kHidden);
    for (int64_t i = 0; i < kRows * kHidden; ++i) static_cast<float*>(t.data)[i] = v;
    return t;
  }
};
}  // namespace

TEST_CASE("an FFN or a mixer publishes through its exit scope, not finish()") {
  World w;
  residual::start(w.batch);
  w.attention.prepare(residual::LayerOutput(w.rows(w.a, 1.f)), w.batch);
  const residual::LayerOutput h = w.attention.finish(w.rows(w.b, 2.f), w.batch);
  w.ffn.prepare(h, w.batch);
  CHECK_THROWS_WITH_AS(w.ffn.finish(w.rows(w.b, 3.f), w.batch), "use the stage exit scope for an FFN or single-stage mixer",
                       UsageError);
}

TEST_CASE("a handoff the exit did not request fails in finish") {
  World w;
  residual::start(w.batch);
  w.attention.prepare(residual::LayerOutput(w.rows(w.a, 1.f)), w.batch);
  w.ffn.prepare(w.attention.finish(w.rows(w.b, 2.f), w.batch), w.batch);
  StageRunner::Exit exit = w.ffn.exit(w.batch);
  CHECK_FALSE(exit.flags().defer_moe_finalize);
  CHECK_THROWS_WITH_AS(exit.finish(residual::HandoffOutput{}), "unrequested deferred MoE handoff", UsageError);
}

TEST_CASE("exit flags are visible only inside the scope, and restored when compute throws") {
  World w;
  residual::start(w.batch);
  w.attention.prepare(residual::LayerOutput(w.rows(w.a, 1.f)), w.batch);
  w.ffn.prepare(w.attention.finish(w.rows(w.b, 2.f), w.batch), w.batch);
  w.batch.exit_flags.mlp_reduce_scatter = true;  // an outer scope's flags
  CHECK_THROWS_AS(
      [&] {
        StageRunner::Exit exit = w.ffn.exit(w.batch);
        CHECK_FALSE(w.batch.exit_flags.mlp_reduce_scatter);
        throw std::runtime_error("compute failed");
      }(),
      std::runtime_error);
  CHECK(w.batch.exit_flags == ExitFlags{.mlp_reduce_scatter = true});
}

TEST_CASE("a prepared branch enters through branch_input") {
  World w;
  const auto branch =
      make_stages(w.ctx, {{dense(), &w.ffn_norm}}, {.prepared_from = moe().with_previous(attn().entering_stack())});
  StageRunner runner(branch[0], w.groups, w.ffn_norm, residual::norm_read(), residual::add_update());
  residual::start(w.batch);
  CHECK_THROWS_WITH_AS(runner.prepare(residual::LayerOutput(w.rows(w.a, 1.f)), w.batch),
                       "a prepared branch must enter through branch_input, not prepare", UsageError);
  CHECK_THROWS_WITH_AS(runner.branch_input(w.rows(w.a, 1.f), w.batch), "a branch must start from a prepared stage input",
                       UsageError);
}

TEST_CASE("branch transport requires ordinary batch rows") {
  World w;
  const auto branch =
      make_stages(w.ctx, {{dense(), &w.ffn_norm}}, {.prepared_from = moe().with_previous(attn().entering_stack())});
  StageRunner runner(branch[0], w.groups, w.ffn_norm, residual::norm_read(), residual::add_update());
  const int64_t tokens[] = {kRows};
  w.batch.facts = BatchFacts::make(tokens, 0, 1, PaddingMode::MAX_LEN, BatchVariant::CONTEXT_PARALLEL);
  residual::start(w.batch);
  const char* message = "branch transport requires ordinary batch rows";
  CHECK_THROWS_WITH_AS(runner.branch_input(w.rows(w.a, 1.f), w.batch), message, NotSupportedError);
  CHECK_THROWS_WITH_AS(w.ffn.branch_output(w.rows(w.a, 1.f), w.batch), message, NotSupportedError);
  CHECK_THROWS_WITH_AS(runner.merge_branch(w.rows(w.b, 1.f), residual::LayerOutput(w.rows(w.a, 2.f)), w.ffn, w.batch),
                       message, NotSupportedError);
}

TEST_CASE("pipeline reception takes the residual from the wire unless the stream arrives written") {
  World w;
  using State = residual::ResidualStream::State;
  // The first stage of a later pipeline partition, after an FFN that ran on the previous rank.
  const StageDeclaration ffn_before = dense().with_previous(attn().entering_stack());
  const auto partition = make_stages(w.ctx, {{attn(), &w.attn_norm}}, {.previous = ffn_before, .terminal = true});
  StageRunner receiver(partition[0], w.groups, w.attn_norm, residual::norm_quant_read(), residual::add_update());
  CHECK_FALSE(partition[0].plan().path(BatchVariant::ORDINARY).arrives_written);
  const Tensor hidden = w.rows(w.a, 2.f), residual = w.rows(w.b, 1.f);

  // A pending stream arrives with its residual.
  receiver.from_pp({hidden, residual, true}, w.batch, residual::add_update());
  CHECK(residual::current(w.batch).state() == State::pending);
  CHECK(residual::current(w.batch).residual().data == residual.data);
  // Without one the hidden states cannot be read: refused, unless the caller allows a written stream.
  CHECK_THROWS_WITH_AS(receiver.from_pp({hidden, {}, false}, w.batch, residual::add_update()),
                       "from_pp: the received tensors carry no residual, but the previous stage leaves its stream "
                       "pending (allow_missing_residual reads the hidden states as a written stream)",
                       ValueError);
  const residual::LayerOutput written = receiver.from_pp({hidden, {}, false}, w.batch, residual::add_update(), true);
  CHECK(residual::current(w.batch).state() == State::written);
  CHECK(written.tensor().data == hidden.data);

  // An update at the producer wrote the stream before the cut: the hidden states are the residual,
  // and a residual on the wire is not read.
  const StageDeclaration mhc_before = declare_ffn({.update = MHC_FFN_UPDATE}).with_previous(attn().entering_stack());
  const auto after_mhc = make_stages(w.ctx, {{attn(), &w.attn_norm}}, {.previous = mhc_before, .terminal = true});
  StageRunner after(after_mhc[0], w.groups, w.attn_norm, residual::norm_quant_read(), residual::add_update());
  CHECK(after_mhc[0].plan().path(BatchVariant::ORDINARY).arrives_written);
  after.from_pp({hidden, residual, true}, w.batch, residual::add_update());
  CHECK(residual::current(w.batch).state() == State::written);
  CHECK(residual::current(w.batch).residual().data == hidden.data);

  // So does an exit that writes the update as it gathers its rows back (an FFN on attention-TP
  // slices handing on attention rows).
  const StageDeclaration gathers_back =
      declare_ffn({.dense_tp_size = 1, .handoff_rows = HandoffRows::ATTENTION}).with_previous(attn().entering_stack());
  const auto after_gather = make_stages(context(2), {{attn()}}, {.previous = gathers_back});
  CHECK(after_gather[0].plan().path(BatchVariant::ORDINARY).arrives_written);
}

TEST_CASE("consumer-step checks on what arrives") {
  World w;
  auto same = [](const Tensor& t, residual::ForwardBatch&) { return t; };
  residual::CompleteSum complete = same;
  SUBCASE("a declared sum the input does not declare") {
    const Tensor r = w.rows(w.b, 1.f);
    const residual::DeclaredSum sum{SumGroup::TP, complete};
    const residual::LayerOutput h = residual::arrive(w.batch, w.rows(w.a, 2.f), &r, residual::add_update(), &sum);
    CHECK_THROWS_WITH_AS(w.attention.prepare(h, w.batch), "producer sum does not match the input declaration", UsageError);
  }
  SUBCASE("carried work without a residual") {
    residual::start(w.batch);
    const residual::LayerOutput h = residual::current(w.batch).leave(
        residual::ProducerOutput::unreduced(w.rows(w.a, 2.f), SumGroup::TP, complete), residual::add_update());
    CHECK_THROWS_WITH_AS(w.attention.prepare(h, w.batch), "UnreducedOutput requires residual input", UsageError);
  }
  SUBCASE("an update of another capability") {
    residual::RmsNorm post(w.weight, 1e-6f);
    const residual::PostNormUpdate nonlinear(post, false);
    const Tensor r = w.rows(w.b, 1.f);
    const residual::LayerOutput h = residual::arrive(w.batch, w.rows(w.a, 2.f), &r, nonlinear);
    CHECK_THROWS_WITH_AS(w.attention.prepare(h, w.batch), "producer update does not match the boundary's capability",
                         UsageError);
  }
}

TEST_CASE("a padded CP take-back checks the full-context rows it reads") {
  World w;
  const int64_t shard_rows[] = {2};
  Buffer full_storage{3 * kHidden * 4};
  const Tensor short_full = full_storage.as_tensor(DType::f32, 1, kHidden);  // one row, the shard needs two
  CHECK_THROWS_WITH_AS(rows::cp_take_back_padded(w.groups, short_full, shard_rows, w.rows(w.a, 0.f)),
                       "row move: a padded CP take-back needs 2 full-context rows (the longest shard per CP rank), got 1",
                       ValueError);
  const Tensor full = full_storage.as_tensor(DType::f32, 2, kHidden);
  CHECK_NOTHROW(rows::cp_take_back_padded(w.groups, full, shard_rows, w.rows(w.a, 0.f)));
}

TEST_CASE("a runner runs its stage with the norm the stage was built with") {
  World w;
  CHECK_THROWS_WITH_AS(StageRunner(w.stages[0], w.groups, w.ffn_norm, residual::norm_quant_read(), residual::add_update()),
                       "a stage runner's norm must be the norm its stage was built with", ValueError);
}

TEST_CASE("a runner's residual operations must match the declared capabilities") {
  World w;
  CHECK_THROWS_WITH_AS(StageRunner(w.stages[0], w.groups, w.attn_norm, residual::plain_read(), residual::add_update()),
                       "the stage's residual operations do not match its declared capabilities", ValueError);
}

TEST_CASE("one rank: a terminal MoE whose provider may defer its finalize completes a tensor output now") {
  struct DefersFinalize : FusionProvider {
    bool can_defer_finalize(const StagePlan&, const BatchFacts&) const override { return true; }
  };
  World w;
  const auto stages = make_stages(
      w.ctx, {{attn(), &w.attn_norm}, {moe(), &w.ffn_norm, {.fusions = std::make_shared<DefersFinalize>()}}},
      {.terminal = true});
  StageRunner attention(stages[0], w.groups, w.attn_norm, residual::norm_quant_read(), residual::add_update());
  StageRunner experts(stages[1], w.groups, w.ffn_norm, residual::norm_read(), residual::add_update());
  residual::start(w.batch);
  attention.prepare(residual::LayerOutput(w.rows(w.a, 1.f)), w.batch);
  residual::LayerOutput h = attention.finish(w.rows(w.b, 2.f), w.batch);
  experts.prepare(h, w.batch);
  StageRunner::Exit exit = experts.exit(w.batch);
  CHECK(exit.flags().defer_moe_finalize);
  h = exit.finish(w.rows(w.b, 3.f));  // compute returned a tensor after all: one rank, nothing to sum
  CHECK_FALSE(h.owed());
  residual::RmsNorm final_norm(w.weight, 1e-6f);
  const Tensor out = residual::norm(h, w.batch, final_norm);
  CHECK(static_cast<const float*>(out.data)[0] == doctest::Approx(1.f));  // the norm of 1 + 2 + 3
}

TEST_CASE("one rank: an AF stack reads, publishes and ends through the final norm") {
  World w;
  residual::start(w.batch);
  const residual::StageInput in = w.attention.prepare(residual::LayerOutput(w.rows(w.a, 1.f)), w.batch);
  CHECK(in.values.rows == kRows);
  residual::LayerOutput h = w.attention.finish(w.rows(w.b, 2.f), w.batch);
  CHECK_FALSE(h.owed());  // one rank: nothing is owed
  w.ffn.prepare(h, w.batch);
  StageRunner::Exit exit = w.ffn.exit(w.batch);
  CHECK(exit.flags() == ExitFlags{});
  h = exit.finish(w.rows(w.b, 3.f));
  residual::RmsNorm final_norm(w.weight, 1e-6f);
  const Tensor out = residual::norm(h, w.batch, final_norm);
  // residual 1 + 2 + 3 = 6 on every element; its RMS norm is 1.
  CHECK(static_cast<const float*>(out.data)[0] == doctest::Approx(1.f));
}
