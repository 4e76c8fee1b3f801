#include "runtime/residual/batch.h"

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/residual/messages.h"

namespace seam::residual {

void start(ForwardBatch& batch) { batch.residual_stream.emplace(); }

ResidualStream& current(ForwardBatch& batch) {
  if (!batch.residual_stream) throw UsageError(messages::kNotStarted);
  return *batch.residual_stream;
}

LayerOutput complete_output(const LayerOutput& h, ForwardBatch& batch) { return current(batch).complete(h, batch); }

LayerOutput fold(const LayerOutput& h, ForwardBatch& batch) {
  ResidualStream& stream = current(batch);
  stream.check(h);
  const Contribution* pending = stream.pending();
  if (!pending) return h;
  if (!pending->update->adds_plainly()) throw NotSupportedError(messages::kFoldNotPlain);
  const FinishedOutput out = stream.finish(h, batch);
  return stream.write(out.has_residual ? out.update->update(out.value, out.residual) : out.value);
}

LayerOutput written(const Tensor& h, ForwardBatch& batch) {
  const Tensor residual = h;  // h may view the stream being replaced
  batch.residual_stream.emplace(residual);
  return batch.residual_stream->written_output();
}

Tensor take_output(const LayerOutput& h, ForwardBatch& batch) {
  ResidualStream& stream = current(batch);
  stream.check(h);
  if (stream.pending()) throw UsageError(messages::kTakeWithPending);
  const Tensor out = h.tensor();
  batch.residual_stream.reset();
  return out;
}

OwnedTensor snapshot(const LayerOutput& h, ForwardBatch& batch) { return current(batch).snapshot(h, batch); }

LayerOutput add_to_output(const LayerOutput& h, ForwardBatch& batch, const Tensor& extra) {
  const LayerOutput completed = current(batch).complete(h, batch);
  kernels::add_inplace(completed.tensor(), extra);
  return completed;
}

Tensor norm(const LayerOutput& h, ForwardBatch& batch, RmsNorm& layernorm, const FinalNormOptions& options) {
  const FinishedOutput out = current(batch).finish(h, batch, {.takes_handoff = options.handoff_norm != nullptr});
  batch.residual_stream.reset();  // the stream is released before the norm runs
  if (out.is_handoff) {
    if (!out.has_residual) throw UsageError(messages::kInvalidFinalHandoff);
    if (options.capture) throw UsageError(messages::kFinalHandoffCapture);
    return options.handoff_norm->finalize(out.handoff, out.residual, layernorm, batch);
  }
  if (options.skip_empty && out.value.rows == 0) return out.value;
  if (!out.has_residual) {
    if (options.capture) options.capture(out.value, false);
    return layernorm.apply(out.value);
  }
  if (!out.update->adds_plainly()) {
    // A nonlinear update runs as its own step before the plain norm.
    const Tensor residual = out.update->update(out.value, out.residual);
    if (options.capture) options.capture(residual, false);
    return layernorm.apply(residual);
  }
  const Tensor normed = layernorm.add_apply(out.value, out.residual);
  if (options.capture) options.capture(out.residual, false);
  return normed;
}

PpTensors to_pp(const LayerOutput& h, ForwardBatch& batch, bool preserve_declared) {
  const FinishedOutput out = current(batch).finish(h, batch, {.preserve_declared = preserve_declared});
  batch.residual_stream.reset();
  return {out.value, out.residual, out.has_residual, out.declared_partial};
}

LayerOutput arrive(ForwardBatch& batch, const Tensor& h, const Tensor* residual, const StageUpdate& update,
                   const DeclaredSum* declared) {
  // Copies first: the arguments may view the stream being replaced.
  const Tensor value = h;
  const Tensor handed_residual = residual ? *residual : Tensor{};
  const std::optional<DeclaredSum> declared_sum = declared ? std::optional(*declared) : std::nullopt;
  ResidualStream& stream = batch.residual_stream.emplace();
  if (!residual) return stream.write(value);
  stream.write(handed_residual);
  return stream.leave(ProducerOutput::complete_tensor(value), update, declared_sum ? &*declared_sum : nullptr);
}

LayerOutput write_at_producer(ForwardBatch& batch, const Tensor& output, const StageUpdate& update) {
  ResidualStream& stream = current(batch);
  if (stream.pending()) throw UsageError(messages::kUnconsumedContribution);
  return stream.write(stream.has_residual() ? update.update(output, stream.residual()) : output);
}

StageInput read_input(const LayerOutput& h, ForwardBatch& batch, const StageRead& read, RmsNorm& norm,
                      const ReadOptions& options) {
  ResidualStream& stream = current(batch);
  stream.check(h);
  ReadResult result;
  switch (stream.state()) {
    case ResidualStream::State::initial: result = read.read(read.enter(h.tensor()), norm, options); break;
    case ResidualStream::State::written: result = read.read(stream.residual(), norm, options); break;
    case ResidualStream::State::pending: {
      const FinishedOutput out = stream.finish(h, batch);
      result = read.update_and_read(*out.update, out.value, out.has_residual ? &out.residual : nullptr, norm, options);
      break;
    }
  }
  stream.write(result.residual);
  return result.input;
}

}  // namespace seam::residual
