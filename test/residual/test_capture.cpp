// Capture ownership (§4.4): what a capture callback receives and whether it may keep it uncopied.
#include <doctest/doctest.h>

#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/capture.h"
#include "test/residual/stream_fixtures.h"

using namespace seam;
using namespace seam::residual;
using namespace seam::test;

namespace {

struct Recorder {
  int calls = 0;
  bool owned = false;
  Tensor value;
  void operator()(const Tensor& v, bool o) {
    ++calls;
    value = v;
    owned = o;
  }
};

}  // namespace

TEST_CASE("a capture at the stack's entry borrows the output; with a residual it owns a fresh sum") {
  HostTensor output = rows_of(2.0f), residual = rows_of(3.0f);
  residual::Storage workspace;
  Recorder recorder;
  capture_before_read(output.view, nullptr, recorder, workspace);
  CHECK(recorder.calls == 1);
  CHECK_FALSE(recorder.owned);
  CHECK(recorder.value.data == output.view.data);

  capture_before_read(output.view, &residual.view, recorder, workspace);
  CHECK(recorder.owned);
  CHECK(recorder.value.data == workspace.data());
  CHECK(all_equal(recorder.value, 5.0f));
  residual.fill(100.0f);  // the residual moves on; the owned capture does not
  CHECK(all_equal(recorder.value, 5.0f));
}

TEST_CASE("snapshots are owned storage that later residual updates do not touch") {
  WrittenBatch s(3.0f);
  HostTensor out = rows_of(2.0f);
  const LayerOutput h = current(s.batch).leave(ProducerOutput::complete_tensor(out.view), add_update());
  const OwnedTensor snap = snapshot(h, s.batch);
  CHECK(snap.view.data != s.residual.view.data);
  CHECK(snap.view.data != out.view.data);
  read_input(h, s.batch, s.read, s.norm.norm);
  CHECK(all_equal(current(s.batch).residual(), 5.0f));
  out.fill(-1.0f);
  CHECK(all_equal(snap.view, 5.0f));
}

TEST_CASE("capture_output completes a carried sum on the main output once") {
  WrittenBatch s(3.0f);
  const LayerOutput h = s.leave_unreduced();
  const CapturedOutput c = capture_output(h, s.batch);
  CHECK(c.captured);
  CHECK_FALSE(c.output.owed());
  CHECK(s.sum.runs == 1);
  CHECK(all_equal(c.snapshot.view, 5.0f));
  read_input(c.output, s.batch, s.read, s.norm.norm);
  CHECK(s.sum.runs == 1);
  CHECK(all_equal(current(s.batch).residual(), 5.0f));
}

TEST_CASE("capture_output snapshots a declared sum on a copy and leaves the main partial owed") {
  WrittenBatch s(3.0f);
  const LayerOutput h = s.leave_declared(SumGroup::ATTN_TP);
  const CapturedOutput c = capture_output(h, s.batch);
  CHECK(c.output.owed());
  CHECK(all_equal(c.snapshot.view, 5.0f));
  CHECK(all_equal(s.partial.view, 1.0f));
  read_input(c.output, s.batch, s.read, s.norm.norm);  // the boundary completes the declared sum once
  CHECK(s.sum.runs == 2);
  CHECK(all_equal(current(s.batch).residual(), 5.0f));
}

TEST_CASE("skipping an empty capture does not complete its output") {
  ForwardBatch batch;
  IdentityRead read;
  UnitNorm norm;
  HostTensor input(DType::f32, 0, 4), partial(DType::f32, 0, 4);
  start(batch);
  read_input(LayerOutput(input.view), batch, read, norm.norm);
  FakeSum sum;
  const LayerOutput h = current(batch).leave(ProducerOutput::unreduced(partial.view, SumGroup::TP, sum), add_update());
  const CapturedOutput c = capture_output(h, batch, true);
  CHECK_FALSE(c.captured);
  CHECK(c.output.owed());
  CHECK(sum.runs == 0);
}
