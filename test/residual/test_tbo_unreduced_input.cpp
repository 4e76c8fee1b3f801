// test_tbo_unreduced_input (§8): TBO entry completes the parent's owed sum before splitting; each
// microbatch owns its contribution; the merge restores the parent's output, residual and update.
#include <cstdint>
#include <doctest/doctest.h>

#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/microbatch.h"
#include "test/residual/stream_fixtures.h"

using namespace seam;
using namespace seam::residual;
using namespace seam::test;

TEST_CASE("TBO splits a completed sum, keeps microbatches apart and merges back") {
  ForwardBatch parent, first, second;
  IdentityRead read;
  UnitNorm norm;
  FakeSum sum;
  HostTensor input = rows_of(3.0f, 3), partial = rows_of(5.0f, 3);
  HostTensor hidden(DType::f32, 3, 4), residual(DType::f32, 3, 4);
  start(parent);
  read_input(LayerOutput(input.view), parent, read, norm.norm);
  const LayerOutput h = current(parent).leave(ProducerOutput::unreduced(partial.view, SumGroup::TP, sum), add_update());

  ForwardBatch* children[] = {&first, &second};
  LayerOutput outputs[2];
  const int64_t rows[] = {1, 2};
  split_microbatches(parent, h, rows, children, outputs);
  CHECK(sum.runs == 1);  // completed once, before the split
  CHECK_FALSE(parent.residual_stream.has_value());
  CHECK_FALSE(outputs[0].owed());
  CHECK(outputs[0].tensor().rows == 1);
  CHECK(outputs[1].tensor().rows == 2);
  CHECK(current(first).pending()->update == &add_update());

  const char* const foreign =
      "output does not belong to this residual stream; change layer outputs through boundary accessors";
  check_throws_message<UsageError>([&] { read_input(outputs[0], second, read, norm.norm); }, foreign);
  check_throws_message<UsageError>([&] { complete_output(outputs[1], first); }, foreign);

  const LayerOutput merged = merge_microbatches(parent, children, outputs, hidden.view, residual.view);
  CHECK(all_equal(merged.tensor(), 10.0f));
  CHECK(all_equal(current(parent).residual(), 3.0f));
  CHECK(current(parent).pending()->update == &add_update());
  CHECK(sum.runs == 1);
}

TEST_CASE("microbatches run their own layers between split and merge") {
  ForwardBatch parent, first, second;
  IdentityRead read;
  UnitNorm norm;
  HostTensor input = rows_of(1.0f, 4), out = rows_of(2.0f, 4), first_out = rows_of(10.0f, 3), second_out = rows_of(20.0f, 1);
  HostTensor hidden(DType::f32, 4, 4), residual(DType::f32, 4, 4);
  start(parent);
  read_input(LayerOutput(input.view), parent, read, norm.norm);
  const LayerOutput h = current(parent).leave(ProducerOutput::complete_tensor(out.view), add_update());
  ForwardBatch* children[] = {&first, &second};
  LayerOutput outputs[2];
  const int64_t rows[] = {3, 1};
  split_microbatches(parent, h, rows, children, outputs);
  // Interleaved: each microbatch reads (residual 1 + 2) and leaves its own output.
  read_input(outputs[0], first, read, norm.norm);
  read_input(outputs[1], second, read, norm.norm);
  outputs[1] = current(second).leave(ProducerOutput::complete_tensor(second_out.view), add_update());
  outputs[0] = current(first).leave(ProducerOutput::complete_tensor(first_out.view), add_update());
  const LayerOutput merged = merge_microbatches(parent, children, outputs, hidden.view, residual.view);
  for (int64_t r = 0; r < 4; ++r) {
    CHECK(get(merged.tensor(), r, 0) == (r < 3 ? 10.0f : 20.0f));
    CHECK(get(current(parent).residual(), r, 0) == 3.0f);
  }
}

// A residual on other rows than the output (an attention-TP slice beside full-row hidden states, as
// an attention leaves it after a dense FFN on local rows) cannot be cut or concatenated by token
// range: split and merge refuse it instead of cutting it at the output's offsets.
TEST_CASE("TBO refuses to split or merge a residual that is not on the output's rows") {
  IdentityRead read;
  UnitNorm norm;
  HostTensor slice = rows_of(1.0f, 2), full = rows_of(2.0f, 4);
  {
    ForwardBatch parent, first, second;
    start(parent);
    read_input(LayerOutput(slice.view), parent, read, norm.norm);  // the residual: 2 rows
    const LayerOutput h = current(parent).leave(ProducerOutput::complete_tensor(full.view), add_update());
    ForwardBatch* children[] = {&first, &second};
    LayerOutput outputs[2];
    const int64_t rows[] = {2, 2};
    check_throws_message<NotSupportedError>(
        [&] { split_microbatches(parent, h, rows, children, outputs); },
        "split_microbatches: the residual (2 rows) is not on the output's rows (4): a token-range split needs both "
        "on the same rows");
    CHECK_FALSE(first.residual_stream.has_value());
  }
  {
    ForwardBatch parent, first, second;
    HostTensor first_slice = rows_of(1.0f, 1), second_slice = rows_of(1.0f, 1);
    HostTensor first_out = rows_of(2.0f, 2), second_out = rows_of(2.0f, 2);
    HostTensor hidden(DType::f32, 4, 4), residual(DType::f32, 4, 4);
    ForwardBatch* children[] = {&first, &second};
    LayerOutput outputs[2];
    start(first);
    start(second);
    read_input(LayerOutput(first_slice.view), first, read, norm.norm);
    read_input(LayerOutput(second_slice.view), second, read, norm.norm);
    outputs[0] = current(first).leave(ProducerOutput::complete_tensor(first_out.view), add_update());
    outputs[1] = current(second).leave(ProducerOutput::complete_tensor(second_out.view), add_update());
    check_throws_message<NotSupportedError>(
        [&] { merge_microbatches(parent, children, outputs, hidden.view, residual.view); },
        "merge_microbatches: microbatch 0's residual (1 rows) is not on its output's rows (2): a token-range merge "
        "needs both on the same rows");
    CHECK_FALSE(parent.residual_stream.has_value());
  }
}
