#include <cstdint>
#include "runtime/residual/capture.h"

#include "kernels/norm/elementwise.h"
#include "runtime/residual/batch.h"

namespace seam::residual {

void capture_before_read(const Tensor& output, const Tensor* residual, Capture capture, Storage& workspace) {
  if (!residual) {
    capture(output, false);
    return;
  }
  const size_t bytes = output.bytes();
  if (!workspace.fits(bytes, output.device)) workspace = Storage(bytes, output.device);
  const Tensor sum = workspace.as_tensor(output.dtype, output.rows, output.cols);
  kernels::copy(output, sum);
  kernels::add_inplace(sum, *residual);
  capture(sum, true);
}

CapturedOutput capture_output(const LayerOutput& h, ForwardBatch& batch, bool skip_empty) {
  ResidualStream& stream = current(batch);
  stream.check(h);
  const Contribution* pending = stream.pending();
  const int64_t rows = !pending ? h.tensor().rows : pending->owed == Owed::handoff ? pending->handoff.rows : pending->value.rows;
  if (skip_empty && rows == 0) return {h, {}, false};
  const bool dynamic = pending && (pending->owed == Owed::carried_sum || pending->owed == Owed::handoff);
  const LayerOutput updated = dynamic ? stream.complete(h, batch) : h;
  return {updated, stream.snapshot(updated, batch), true};
}

}  // namespace seam::residual
