// test_longcat_flash_shortcut (§8, the stream's part): a prepared branch forks the stream, and its
// output merges with the other branch's so the residual is added exactly once.
#include <doctest/doctest.h>

#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/branch.h"
#include "test/residual/stream_fixtures.h"

using namespace seam;
using namespace seam::residual;
using namespace seam::test;

TEST_CASE("the shortcut branch's output does not add the residual twice") {
  ForwardBatch batch;
  IdentityRead read;
  UnitNorm norm;
  HostTensor embedding = rows_of(1.0f), first_ffn = rows_of(2.0f), attention = rows_of(4.0f), shortcut = rows_of(5.0f),
             moe = rows_of(4.0f);
  start(batch);
  // The MoE stage reads its input (residual 1); the shortcut branch reuses that read.
  const StageInput moe_input = read_input(LayerOutput(embedding.view), batch, read, norm.norm);
  CHECK(all_equal(moe_input.values, 1.0f));
  fork_branch(batch, current(batch).residual());
  // Branch: dense FFN -> attention -> dense FFN, each reading the branch stream.
  LayerOutput h = current(batch).leave(ProducerOutput::complete_tensor(first_ffn.view), add_update());
  read_input(h, batch, read, norm.norm);  // residual 3
  h = current(batch).leave(ProducerOutput::complete_tensor(attention.view), add_update());
  read_input(h, batch, read, norm.norm);  // residual 7
  h = current(batch).leave(ProducerOutput::complete_tensor(shortcut.view), add_update());
  CHECK(all_equal(shortcut.view, 5.0f));
  // Merge the MoE output with the shortcut's; the next layer adds both once.
  const LayerOutput merged = merge_branch(batch, moe.view, h);
  CHECK(all_equal(merged.tensor(), 9.0f));
  CHECK(all_equal(current(batch).residual(), 7.0f));
  read_input(merged, batch, read, norm.norm);
  CHECK(all_equal(current(batch).residual(), 16.0f));
}

TEST_CASE("a branch needs a prepared input, and a merge a pending output") {
  ForwardBatch batch;
  IdentityRead read;
  UnitNorm norm;
  HostTensor input = rows_of(1.0f), out = rows_of(2.0f), other = rows_of(3.0f);
  start(batch);
  read_input(LayerOutput(input.view), batch, read, norm.norm);
  const LayerOutput written_output = current(batch).written_output();
  check_throws_message<UsageError>([&] { merge_branch(batch, other.view, written_output); },
                                   "branch merge requires a pending producer contribution");
  current(batch).leave(ProducerOutput::complete_tensor(out.view), add_update());
  check_throws_message<UsageError>([&] { fork_branch(batch, input.view); },
                                   "a branch must start from a prepared stage input");
}
