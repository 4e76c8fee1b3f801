// test_residual_stream (§8): the stream's state machine, owed work, identity checks and helpers.
#include <cstdint>
#include <doctest/doctest.h>

#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/branch.h"
#include "test/residual/stream_fixtures.h"

using namespace seam;
using namespace seam::residual;
using namespace seam::test;

namespace {

const char* const kForeign =
    "output does not belong to this residual stream; change layer outputs through boundary accessors";

}  // namespace

TEST_CASE("a written input does not repeat the first stage's enter") {
  WrittenBatch w(1.0f);
  CHECK(w.read.enters == 1);
  HostTensor out = rows_of(2.0f);
  const LayerOutput folded = fold(w.leave(out.view), w.batch);
  CHECK(all_equal(folded.tensor(), 3.0f));
  CHECK(current(w.batch).state() == ResidualStream::State::written);
  read_input(folded, w.batch, w.read, w.norm.norm);
  CHECK(w.read.enters == 1);
}

TEST_CASE("the consumer executes the carried update, not a declared one") {
  WrittenBatch w(1.0f);
  DoubleAddUpdate update;
  HostTensor out = rows_of(2.0f);
  const LayerOutput h = w.leave(out.view, update);
  read_input(h, w.batch, w.read, w.norm.norm);
  CHECK(update.runs == 1);
  CHECK(all_equal(current(w.batch).residual(), 5.0f));
}

TEST_CASE("a declared sum: snapshot sums a copy, finish completes, a rebuilt stream owes nothing") {
  WrittenBatch w(3.0f);
  const LayerOutput h = w.leave_declared(SumGroup::ATTN_TP);
  CHECK(h.owed());

  const OwnedTensor snap = snapshot(h, w.batch);
  CHECK(all_equal(snap.view, 5.0f));
  CHECK(all_equal(w.partial.view, 1.0f));  // the main partial is untouched and still owed
  CHECK(current(w.batch).pending()->owed == Owed::declared_sum);
  CHECK(w.sum.runs == 1);

  const FinishedOutput out = current(w.batch).finish(h, w.batch);
  CHECK(all_equal(out.value, 2.0f));
  CHECK(w.sum.runs == 2);

  ForwardBatch rebuilt;
  const LayerOutput again = arrive(rebuilt, out.value, &out.residual, add_update());
  CHECK_FALSE(again.owed());
  CHECK(current(rebuilt).pending()->owed == Owed::none);
}

TEST_CASE("an already completed declared sum is not reduced again") {
  WrittenBatch w(3.0f);
  const LayerOutput completed = complete_output(w.leave_declared(SumGroup::TP), w.batch);
  CHECK(w.sum.runs == 1);
  CHECK(complete_output(completed, w.batch).tensor().data == completed.tensor().data);  // idempotent
  read_input(completed, w.batch, w.read, w.norm.norm);
  CHECK(w.sum.runs == 1);
  CHECK(all_equal(current(w.batch).residual(), 5.0f));
}

TEST_CASE("snapshot rejects a nonlinear update before touching anything") {
  WrittenBatch w(3.0f);
  DoubleAddUpdate update;
  const LayerOutput h = w.leave_declared(SumGroup::ATTN_TP, update);
  check_throws_message<NotSupportedError>([&] { snapshot(h, w.batch); }, "snapshot requires a plain residual update");
  CHECK(w.sum.runs == 0);
  CHECK(update.runs == 0);
  CHECK(current(w.batch).pending()->owed == Owed::declared_sum);
  check_throws_message<NotSupportedError>([&] { fold(h, w.batch); }, "fold requires a plain residual update");
}

TEST_CASE("an OwedOutput gives no tensor access") {
  WrittenBatch w(0.0f);
  const LayerOutput h = w.leave_unreduced();
  CHECK(h.owed());
  CHECK_THROWS_AS(h.tensor(), TypeError);
}

TEST_CASE("completion runs once and keeps the update pending; stale and rebuilt handles are rejected") {
  WrittenBatch w(0.0f);
  const LayerOutput h = w.leave_unreduced();
  const LayerOutput completed = complete_output(h, w.batch);
  CHECK(w.sum.runs == 1);
  CHECK(current(w.batch).pending()->update == &add_update());
  check_throws_message<UsageError>([&] { read_input(h, w.batch, w.read, w.norm.norm); }, kForeign);
  check_throws_message<UsageError>(
      [&] { read_input(LayerOutput(completed.tensor()), w.batch, w.read, w.norm.norm); }, kForeign);
  read_input(completed, w.batch, w.read, w.norm.norm);
  CHECK(w.sum.runs == 1);
  CHECK(all_equal(current(w.batch).residual(), 2.0f));
}

TEST_CASE("add_to_output completes the sum, then adds the extra once") {
  WrittenBatch w(0.0f);
  w.partial.fill(4.0f);
  HostTensor extra = rows_of(1.0f);
  const LayerOutput h = w.leave_unreduced();
  const LayerOutput extended = add_to_output(h, w.batch, extra.view);
  CHECK(all_equal(extended.tensor(), 9.0f));
  CHECK(w.sum.runs == 1);
  CHECK(current(w.batch).pending()->update == &add_update());
  read_input(extended, w.batch, w.read, w.norm.norm);
  CHECK(all_equal(current(w.batch).residual(), 9.0f));
  CHECK(w.sum.runs == 1);
}

TEST_CASE("handles cannot cross microbatches, record over a pending contribution, or outlive a write") {
  WrittenBatch a(0.0f), b(0.0f);
  HostTensor out_a = rows_of(1.0f), out_b = rows_of(2.0f);
  const LayerOutput ha = a.leave(out_a.view);
  const LayerOutput hb = b.leave(out_b.view);
  check_throws_message<UsageError>([&] { read_input(ha, b.batch, b.read, b.norm.norm); }, kForeign);
  check_throws_message<UsageError>([&] { a.leave(out_b.view); }, "cannot replace an unconsumed producer contribution");
  read_input(ha, a.batch, a.read, a.norm.norm);
  check_throws_message<UsageError>([&] { read_input(ha, a.batch, a.read, a.norm.norm); },
                                   "written residual does not match the supplied output");
  a.leave(out_b.view);
  check_throws_message<UsageError>([&] { read_input(ha, a.batch, a.read, a.norm.norm); }, kForeign);
  read_input(hb, b.batch, b.read, b.norm.norm);
}

TEST_CASE("an owed handle presented to a stream with nothing pending is rejected") {
  WrittenBatch w(0.0f);
  const LayerOutput h = w.leave_declared(SumGroup::ATTN_TP);
  read_input(h, w.batch, w.read, w.norm.norm);
  check_throws_message<UsageError>([&] { read_input(h, w.batch, w.read, w.norm.norm); },
                                   "an owed handle has no contribution in this stream");
}

TEST_CASE("a declared sum needs a raw tensor") {
  WrittenBatch w(0.0f);
  const DeclaredSum declared{SumGroup::ATTN_TP, w.sum};
  check_throws_message<UsageError>(
      [&] { current(w.batch).leave(ProducerOutput::unreduced(w.partial.view, SumGroup::TP, w.sum), add_update(), &declared); },
      "a declared sum cannot carry another completion");
}

TEST_CASE("every helper needs a started stack") {
  ForwardBatch batch;
  IdentityRead read;
  UnitNorm norm;
  HostTensor h = rows_of(1.0f);
  const char* const message = "start the layer stack before entering a stage";
  check_throws_message<UsageError>([&] { read_input(LayerOutput(h.view), batch, read, norm.norm); }, message);
  check_throws_message<UsageError>([&] { fold(LayerOutput(h.view), batch); }, message);
  check_throws_message<UsageError>([&] { residual::norm(LayerOutput(h.view), batch, norm.norm); }, message);
  check_throws_message<UsageError>([&] { to_pp(LayerOutput(h.view), batch); }, message);
}

TEST_CASE("rebinding a layer output to another tensor is rejected") {
  WrittenBatch w(0.0f);
  HostTensor out = rows_of(1.0f), other = rows_of(1.0f);
  const LayerOutput h = w.leave(out.view);
  check_throws_message<UsageError>([&] { read_input(LayerOutput(other.view), w.batch, w.read, w.norm.norm); }, kForeign);
  check_throws_message<UsageError>([&] { complete_output(LayerOutput(out.view), w.batch); }, kForeign);
  read_input(h, w.batch, w.read, w.norm.norm);
}

TEST_CASE("take_output rejects pending work and mismatched outputs") {
  WrittenBatch w(0.0f);
  HostTensor out = rows_of(1.0f);
  const LayerOutput h = w.leave(out.view);
  check_throws_message<UsageError>([&] { take_output(h, w.batch); },
                                   "write the residual update before taking the final output");
  const LayerOutput folded = fold(h, w.batch);
  check_throws_message<UsageError>([&] { take_output(LayerOutput(out.view), w.batch); },
                                   "written residual does not match the supplied output");
  CHECK(all_equal(take_output(folded, w.batch), 1.0f));
  CHECK_FALSE(w.batch.residual_stream.has_value());
}

TEST_CASE("a finalize handoff: completed unfused, refused by snapshot, taken by a handoff norm") {
  struct Finalize {
    HostTensor done = rows_of(6.0f);
    int runs = 0;
    Tensor operator()(ForwardBatch&) {
      ++runs;
      return done.view;
    }
  } finalize;
  struct FusedNorm final : HandoffNorm {
    int runs = 0;
    Tensor finalize(const HandoffOutput& handoff, const Tensor& residual, RmsNorm&, ForwardBatch&) override {
      ++runs;
      CHECK(handoff.rows == 2);
      return residual;
    }
  } fused;
  const HandoffOutput handoff{finalize, nullptr, 2};
  {
    WrittenBatch w(1.0f);
    const LayerOutput h = current(w.batch).leave(ProducerOutput::from_handoff(handoff), add_update());
    CHECK(h.owed());
    check_throws_message<NotSupportedError>([&] { snapshot(h, w.batch); }, "a finalize handoff requires main-output capture");
    const LayerOutput completed = complete_output(h, w.batch);
    CHECK(all_equal(completed.tensor(), 6.0f));
    CHECK(finalize.runs == 1);
  }
  {
    WrittenBatch w(1.0f);
    const LayerOutput h = current(w.batch).leave(ProducerOutput::from_handoff(handoff), add_update());
    auto ignore = [](const Tensor&, bool) {};
    check_throws_message<UsageError>(
        [&] { residual::norm(h, w.batch, w.norm.norm, {.capture = ignore, .handoff_norm = &fused}); },
        "final handoff capture requires an explicit capture adapter");
  }
  {
    WrittenBatch w(1.0f);
    const LayerOutput h = current(w.batch).leave(ProducerOutput::from_handoff(handoff), add_update());
    residual::norm(h, w.batch, w.norm.norm, {.handoff_norm = &fused});
    CHECK(fused.runs == 1);
    CHECK(finalize.runs == 1);  // the fused norm took it; the unfused tail never ran
  }
  {
    ForwardBatch batch;
    start(batch);
    const LayerOutput h = current(batch).leave(ProducerOutput::from_handoff(handoff), add_update());
    UnitNorm norm;
    check_throws_message<UsageError>([&] { residual::norm(h, batch, norm.norm, {.handoff_norm = &fused}); },
                                     "invalid final deferred MoE handoff");
  }
}

TEST_CASE("the final norm captures the residual it produced, borrowed, and releases the stream") {
  WrittenBatch w(3.0f);
  HostTensor out = rows_of(2.0f);
  const LayerOutput h = w.leave(out.view);
  int captures = 0;
  bool released_before_capture = false;
  auto capture = [&](const Tensor& value, bool owned) {
    ++captures;
    CHECK_FALSE(owned);
    CHECK(all_equal(value, 5.0f));
    released_before_capture = !w.batch.residual_stream.has_value();
  };
  const Tensor normed = residual::norm(h, w.batch, w.norm.norm, {.capture = capture});
  CHECK(captures == 1);
  CHECK(released_before_capture);
  CHECK(all_equal(normed, 5.0f * (1.0f / std::sqrt(25.0f + 1e-6f))));
}

TEST_CASE("skip_empty completes owed work but skips the norm") {
  WrittenBatch w(0.0f, 0);
  const LayerOutput h = w.leave_unreduced();
  const Tensor out = residual::norm(h, w.batch, w.norm.norm, {.skip_empty = true});
  CHECK(w.sum.runs == 1);  // peers join this collective even with 0 rows here
  CHECK(out.rows == 0);
}

TEST_CASE("pipeline export preserves a declared partial for the receiver, which completes it once") {
  WrittenBatch w(3.0f);
  const PpTensors sent = to_pp(w.leave_declared(SumGroup::ATTN_TP), w.batch);
  CHECK_FALSE(w.batch.residual_stream.has_value());
  CHECK(all_equal(sent.hidden_states, 1.0f));  // raw partial on the wire
  CHECK(sent.has_residual);
  CHECK(w.sum.runs == 0);

  ForwardBatch receiver;
  IdentityRead read;
  UnitNorm norm;
  const LayerOutput h = arrive(receiver, sent.hidden_states, &sent.residual, add_update(), &*w.declared);
  CHECK(h.owed());
  read_input(h, receiver, read, norm.norm);
  CHECK(w.sum.runs == 1);
  CHECK(all_equal(current(receiver).residual(), 5.0f));
}

TEST_CASE("a carried sum is completed before pipeline transport") {
  WrittenBatch w(3.0f);
  const LayerOutput h = w.leave_unreduced();
  const PpTensors sent = to_pp(h, w.batch);
  CHECK(w.sum.runs == 1);
  CHECK(all_equal(sent.hidden_states, 2.0f));
}

TEST_CASE("interleaved batches keep independent streams") {
  WrittenBatch a(4.0f), b(20.0f);
  HostTensor out_a = rows_of(10.0f), out_b = rows_of(200.0f);
  const LayerOutput ha = a.leave(out_a.view);
  const LayerOutput hb = b.leave(out_b.view);
  read_input(hb, b.batch, b.read, b.norm.norm);
  read_input(ha, a.batch, a.read, a.norm.norm);
  CHECK(all_equal(current(a.batch).residual(), 14.0f));
  CHECK(all_equal(current(b.batch).residual(), 220.0f));
}

TEST_CASE("a written stream hands its residual to the final norm without another add") {
  WrittenBatch w(0.0f);
  HostTensor out = rows_of(2.0f);
  const LayerOutput folded = fold(w.leave(out.view), w.batch);
  const Tensor normed = residual::norm(folded, w.batch, w.norm.norm);
  CHECK(all_equal(normed, 2.0f * (1.0f / std::sqrt(4.0f + 1e-6f))));
  CHECK_FALSE(w.batch.residual_stream.has_value());
}
