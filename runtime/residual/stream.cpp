#include <cstdint>
#include "runtime/residual/stream.h"

#include <atomic>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/residual/messages.h"
#include "runtime/residual/update_read.h"

namespace seam::residual {
namespace {

uint32_t next_stream_id() {
  static std::atomic<uint32_t> counter{0};
  return ++counter;
}

}  // namespace

const Tensor& LayerOutput::tensor() const {
  if (owed_) throw TypeError(messages::kOwedHasNoTensor);
  return value_;
}

ResidualStream::ResidualStream() : id_(next_stream_id()), stamp_{id_, 1} {}

ResidualStream::ResidualStream(const Tensor& residual) : ResidualStream() { write(residual); }

LayerOutput ResidualStream::issue(const Tensor& value, bool owed) const {
  return LayerOutput::issued(owed ? Tensor{} : value, stamp_, owed);
}

LayerOutput ResidualStream::written_output() const { return issue(residual_, false); }

LayerOutput ResidualStream::write(const Tensor& residual) {
  state_ = State::written;
  residual_ = residual;
  has_residual_ = true;
  pending_ = {};
  next_generation();
  return issue(residual_, false);
}

LayerOutput ResidualStream::leave(const ProducerOutput& output, const StageUpdate& update, const DeclaredSum* declared) {
  if (state_ == State::pending) throw UsageError(messages::kUnconsumedContribution);
  Contribution c;
  c.update = &update;
  c.value = output.value;
  if (declared) {
    if (output.kind != ProducerOutput::Kind::complete) throw UsageError(messages::kDeclaredSumCompletion);
    c.owed = Owed::declared_sum;
    c.group = declared->group;
    c.complete_sum = declared->complete;
  } else if (output.kind == ProducerOutput::Kind::unreduced) {
    c.owed = Owed::carried_sum;
    c.group = output.group;
    c.redistributes = output.redistributes;
    c.complete_sum = output.complete_sum;
  } else if (output.kind == ProducerOutput::Kind::handoff) {
    c.owed = Owed::handoff;
    c.handoff = output.handoff;
    c.value = Tensor{};
  }
  pending_ = c;
  state_ = State::pending;
  next_generation();
  return issue(pending_.value, pending_.owed != Owed::none);
}

void ResidualStream::check(const LayerOutput& h) const {
  switch (state_) {
    case State::initial:
      if (h.owed()) throw UsageError(messages::kOwedWithoutContribution);
      return;
    case State::written:
      if (h.owed()) throw UsageError(messages::kOwedWithoutContribution);
      if (h.stamp() != stamp_) throw UsageError(messages::kWrittenMismatch);
      return;
    case State::pending:
      if (h.stamp() != stamp_ || h.owed() != (pending_.owed != Owed::none))
        throw UsageError(messages::kForeignOutput);
      return;
  }
}

void ResidualStream::run_owed(ForwardBatch& batch) {
  switch (pending_.owed) {
    case Owed::none: return;
    case Owed::declared_sum:
    case Owed::carried_sum: pending_.value = pending_.complete_sum(pending_.value, batch); break;
    case Owed::handoff: pending_.value = pending_.handoff.complete(batch); break;
  }
  pending_.owed = Owed::none;
  pending_.complete_sum = {};
  pending_.handoff = {};
  next_generation();
}

LayerOutput ResidualStream::complete(const LayerOutput& h, ForwardBatch& batch) {
  check(h);
  if (state_ != State::pending) return h;
  run_owed(batch);
  return issue(pending_.value, false);
}

OwnedTensor ResidualStream::snapshot(const LayerOutput& h, ForwardBatch& batch) const {
  check(h);
  if (state_ != State::pending) return OwnedTensor::clone(h.tensor());
  // Refuse before touching anything: a nonlinear update cannot be snapshot as value + residual.
  if (!pending_.update->adds_plainly()) throw NotSupportedError(messages::kSnapshotNotPlain);
  if (pending_.owed == Owed::handoff) throw NotSupportedError(messages::kHandoffCapture);
  OwnedTensor snap = OwnedTensor::clone(pending_.value);
  if (pending_.owes_sum()) {
    // The sum runs on the copy; its result may land in storage the step reuses, so keep a copy.
    const Tensor summed = pending_.complete_sum(snap.view, batch);
    if (summed.data != snap.view.data || summed.rows != snap.view.rows) snap = OwnedTensor::clone(summed);
  }
  if (has_residual_) kernels::add_inplace(snap.view, residual_);
  return snap;
}

FinishedOutput ResidualStream::finish(const LayerOutput& h, ForwardBatch& batch, FinishOptions options) {
  check(h);
  FinishedOutput out;
  if (state_ != State::pending) {
    out.value = h.tensor();
    return out;
  }
  out.residual = residual_;
  out.has_residual = has_residual_;
  out.update = pending_.update;
  if (options.preserve_declared && pending_.owed == Owed::declared_sum) {
    out.value = pending_.value;
    out.declared_partial = true;
    out.declared = {pending_.group, pending_.complete_sum};
  } else if (options.takes_handoff && pending_.owed == Owed::handoff) {
    out.is_handoff = true;
    out.handoff = pending_.handoff;
  } else {
    run_owed(batch);
    out.value = pending_.value;
  }
  return out;
}

}  // namespace seam::residual
