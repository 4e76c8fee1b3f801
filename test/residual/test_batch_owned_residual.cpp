// test_batch_owned_residual (§8): the ForwardBatch owns its stream; start, the final norm, pipeline
// export and take_output release it; split prefill keeps it between segments.
#include <cstdint>
#include <doctest/doctest.h>

#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/microbatch.h"
#include "test/residual/stream_fixtures.h"

using namespace seam;
using namespace seam::residual;
using namespace seam::test;

namespace {

// One layer whose output owes a carried sum: read, then leave `value` as a partial.
LayerOutput run_layer(const LayerOutput& h, ForwardBatch& batch, IdentityRead& read, RmsNorm& norm, HostTensor& out,
                      FakeSum& sum) {
  read_input(h, batch, read, norm);
  return current(batch).leave(ProducerOutput::unreduced(out.view, SumGroup::TP, sum), add_update());
}

}  // namespace

TEST_CASE("start releases the previous call's stream") {
  ForwardBatch batch;
  start(batch);
  const uint32_t first = current(batch).id();
  FakeSum sum;
  HostTensor out = rows_of(1.0f);
  const LayerOutput h = current(batch).leave(ProducerOutput::unreduced(out.view, SumGroup::TP, sum), add_update());
  start(batch);
  CHECK(current(batch).id() != first);
  CHECK(current(batch).state() == ResidualStream::State::initial);
  check_throws_message<UsageError>([&] { complete_output(h, batch); }, "an owed handle has no contribution in this stream");
  CHECK(sum.runs == 0);
}

TEST_CASE("the final norm, pipeline export and take_output release the stream") {
  IdentityRead read;
  UnitNorm norm;
  HostTensor input = rows_of(1.0f), out = rows_of(1.0f);
  for (int exit = 0; exit < 3; ++exit) {
    ForwardBatch batch;
    start(batch);
    read_input(LayerOutput(input.view), batch, read, norm.norm);
    const LayerOutput h = current(batch).leave(ProducerOutput::complete_tensor(out.view), add_update());
    if (exit == 0) residual::norm(h, batch, norm.norm);
    if (exit == 1) to_pp(h, batch);
    if (exit == 2) take_output(fold(h, batch), batch);
    CHECK_FALSE(batch.residual_stream.has_value());
  }
}

TEST_CASE("split prefill keeps one stream across segments and releases it at the end") {
  ForwardBatch batch;
  IdentityRead read;
  UnitNorm norm;
  FakeSum sum;
  HostTensor input = rows_of(1.0f);
  HostTensor outs[4] = {rows_of(1.0f), rows_of(1.0f), rows_of(1.0f), rows_of(1.0f)};
  // Segment one starts the stack and runs two layers; nothing is completed at its end.
  start(batch);
  LayerOutput h(input.view);
  for (int layer = 0; layer < 2; ++layer) h = run_layer(h, batch, read, norm.norm, outs[layer], sum);
  const uint32_t owner = current(batch).id();
  CHECK(sum.runs == 1);
  // Segment two continues the same stream and completes it through the final norm.
  for (int layer = 2; layer < 4; ++layer) h = run_layer(h, batch, read, norm.norm, outs[layer], sum);
  CHECK(current(batch).id() == owner);
  int captures = 0;
  auto capture = [&](const Tensor& value, bool) {
    ++captures;
    CHECK(all_equal(value, 9.0f));
  };
  residual::norm(h, batch, norm.norm, {.capture = capture});
  CHECK(sum.runs == 4);
  CHECK(captures == 1);
  CHECK_FALSE(batch.residual_stream.has_value());
}

TEST_CASE("an MTP head folds, normalises itself and takes the written output") {
  ForwardBatch batch;
  IdentityRead read;
  UnitNorm norm;
  HostTensor input = rows_of(1.0f), out = rows_of(3.0f);
  start(batch);
  read_input(LayerOutput(input.view), batch, read, norm.norm);
  const LayerOutput folded = fold(current(batch).leave(ProducerOutput::complete_tensor(out.view), add_update()), batch);
  const Tensor normed = norm.norm.apply(folded.tensor());
  const LayerOutput final_output = written(normed, batch);
  const Tensor taken = take_output(final_output, batch);
  CHECK(taken.data == normed.data);
  CHECK(all_equal(taken, 4.0f * (1.0f / std::sqrt(16.0f + 1e-6f))));
  CHECK_FALSE(batch.residual_stream.has_value());
}

TEST_CASE("TBO children are stream-free after the merge") {
  ForwardBatch parent, first, second;
  IdentityRead read;
  UnitNorm norm;
  HostTensor input = rows_of(1.0f, 3), out = rows_of(2.0f, 3), hidden(DType::f32, 3, 4), residual(DType::f32, 3, 4);
  start(parent);
  read_input(LayerOutput(input.view), parent, read, norm.norm);
  const LayerOutput h = current(parent).leave(ProducerOutput::complete_tensor(out.view), add_update());
  ForwardBatch* children[] = {&first, &second};
  LayerOutput outputs[2];
  const int64_t rows[] = {2, 1};
  split_microbatches(parent, h, rows, children, outputs);
  const LayerOutput merged = merge_microbatches(parent, children, outputs, hidden.view, residual.view);
  CHECK_FALSE(first.residual_stream.has_value());
  CHECK_FALSE(second.residual_stream.has_value());
  CHECK(current(parent).state() == ResidualStream::State::pending);
  read_input(merged, parent, read, norm.norm);
  CHECK(all_equal(current(parent).residual(), 3.0f));
}
