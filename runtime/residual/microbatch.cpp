#include <cstdint>
#include "runtime/residual/microbatch.h"

#include <string>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/residual/batch.h"

namespace seam::residual {

void split_microbatches(ForwardBatch& parent, const LayerOutput& h, std::span<const int64_t> rows,
                        std::span<ForwardBatch* const> children, std::span<LayerOutput> outputs) {
  if (rows.size() != children.size() || outputs.size() != children.size())
    throw ValueError("split_microbatches: one row count and one output per microbatch");
  ResidualStream& stream = current(parent);
  const ResidualStream::State state = stream.state();
  const FinishedOutput out = stream.finish(h, parent);  // completes the owed sum before splitting
  // A token-range split cuts the output and the residual alike: both must sit on the same rows (a
  // residual left on attention-TP slices beside full-row outputs would be cut at the wrong tokens).
  if (out.has_residual && out.residual.rows != out.value.rows)
    throw NotSupportedError("split_microbatches: the residual (" + std::to_string(out.residual.rows) +
                            " rows) is not on the output's rows (" + std::to_string(out.value.rows) +
                            "): a token-range split needs both on the same rows");
  int64_t total = 0;
  for (int64_t n : rows) total += n;
  if (total != out.value.rows)
    throw ValueError("split_microbatches: microbatch rows sum to " + std::to_string(total) + ", the output has " +
                     std::to_string(out.value.rows));
  int64_t offset = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    const Tensor value = out.value.slice_rows(offset, rows[i]);
    ForwardBatch& child = *children[i];
    if (state == ResidualStream::State::initial) {
      start(child);
      outputs[i] = LayerOutput(value);
    } else if (state == ResidualStream::State::written) {
      outputs[i] = written(value, child);
    } else {
      const Tensor residual = out.has_residual ? out.residual.slice_rows(offset, rows[i]) : Tensor{};
      outputs[i] = arrive(child, value, out.has_residual ? &residual : nullptr, *out.update);
    }
    offset += rows[i];
  }
  parent.residual_stream.reset();
}

LayerOutput merge_microbatches(ForwardBatch& parent, std::span<ForwardBatch* const> children,
                               std::span<const LayerOutput> outputs, const Tensor& hidden, const Tensor& residual) {
  if (outputs.size() != children.size()) throw ValueError("merge_microbatches: one output per microbatch");
  const StageUpdate* update = nullptr;
  size_t with_residual = 0;
  int64_t offset = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    ForwardBatch& child = *children[i];
    const FinishedOutput out = current(child).finish(outputs[i], child);
    if (out.has_residual && out.residual.rows != out.value.rows)
      throw NotSupportedError("merge_microbatches: microbatch " + std::to_string(i) + "'s residual (" +
                              std::to_string(out.residual.rows) + " rows) is not on its output's rows (" +
                              std::to_string(out.value.rows) + "): a token-range merge needs both on the same rows");
    child.residual_stream.reset();
    if (i > 0 && out.update != update) throw UsageError("microbatches merged with different residual updates");
    update = out.update;
    kernels::copy(out.value, hidden.slice_rows(offset, out.value.rows));
    if (out.has_residual) {
      kernels::copy(out.residual, residual.slice_rows(offset, out.residual.rows));
      ++with_residual;
    }
    offset += out.value.rows;
  }
  if (offset != hidden.rows) throw ValueError("merge_microbatches: the microbatches do not cover the output rows");
  if (with_residual != 0 && with_residual != children.size())
    throw UsageError("microbatches merged with and without a residual");
  if (!update) return written(hidden, parent);  // the children were written: hidden is the residual
  return arrive(parent, hidden, with_residual ? &residual : nullptr, *update);
}

}  // namespace seam::residual
