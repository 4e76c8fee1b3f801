// ResidualStream: the per-forward residual state between boundaries (§1.11, §4.1–§4.2).
//   Initial  — no residual, nothing pending: the first stage's read enters the stack.
//   Written  — a residual, nothing pending: the next read skips any update.
//   Pending  — a producer contribution (and usually a residual): complete its owed work, apply its
//              update, then read.
// The stream holds views only; the producer keeps its output's storage alive until the next
// boundary consumed it. Every value it hands out is stamped with (stream id, generation), and
// every call that takes one back checks it against the current state (check()).
#pragma once

#include <cstdint>
#include <memory>

#include "seam/tensor.h"
#include "runtime/residual/contribution.h"
#include "runtime/residual/layer_output.h"
#include "runtime/residual/owned_tensor.h"

namespace seam::residual {

/// A stream's output and residual handed on (to a final norm, a pipeline peer, a merge).
struct FinishedOutput {
  Tensor value;                         ///< completed value, or the raw partial of a preserved declared sum
  Tensor residual;                      ///< empty when the stream had none
  bool has_residual = false;
  const StageUpdate* update = nullptr;  ///< the pending update (null when the stream was written)
  bool declared_partial = false;        ///< value is a partial still owing `declared` (preserve_declared)
  DeclaredSum declared{};
  bool is_handoff = false;              ///< value is empty; `handoff` is owed (takes_handoff)
  HandoffOutput handoff{};
};

/// Which owed work finish() hands on instead of completing it.
struct FinishOptions {
  bool takes_handoff = false;      ///< hand a finalize handoff on (a final norm that fuses it)
  bool preserve_declared = false;  ///< hand a declared partial on raw (pipeline export)
};

class ResidualStream {
 public:
  enum class State : uint8_t { initial, written, pending };

  /// An Initial stream.
  ResidualStream();
  /// A Written stream whose residual is `residual`.
  explicit ResidualStream(const Tensor& residual);
  // One stream per forward (or microbatch): a copy would accept the same handles as its original.
  ResidualStream(const ResidualStream&) = delete;
  ResidualStream& operator=(const ResidualStream&) = delete;

  State state() const { return state_; }
  uint32_t id() const { return id_; }
  bool has_residual() const { return has_residual_; }
  /// The residual (empty when none).
  const Tensor& residual() const { return residual_; }
  /// The pending contribution, or null.
  const Contribution* pending() const { return state_ == State::pending ? &pending_ : nullptr; }
  /// The value a Written stream issued for its residual (what the next call must pass back).
  LayerOutput written_output() const;
  /// Lives exactly as long as this stream: a holder of this stream's values (a stage runner's
  /// buffers) keeps a weak reference to tell a live stream from a released one.
  const std::shared_ptr<const int>& liveness() const { return alive_; }

  /// residual := r, nothing pending (consumes the contribution). Returns r, stamped.
  LayerOutput write(const Tensor& residual);

  /// Records a producer's contribution with its update (and, for a partial every output of this
  /// producer owes, its declared sum). Returns the complete tensor, or an OwedOutput handle while
  /// work is owed. Throws UsageError while another contribution is pending, or when a declared sum
  /// is given for anything but a raw tensor.
  LayerOutput leave(const ProducerOutput& output, const StageUpdate& update, const DeclaredSum* declared = nullptr);

  /// The identity check: h must be exactly the value this state issued (UsageError with the guide's
  /// message otherwise). An Initial stream accepts any tensor that is not an OwedOutput.
  void check(const LayerOutput& h) const;

  /// Runs the owed work (unfused) and keeps the update pending. Idempotent: a second call returns
  /// the same value and runs nothing.
  LayerOutput complete(const LayerOutput& h, ForwardBatch& batch);

  /// An owned snapshot of output + residual (a plain update only). An owed sum runs on a copy; the
  /// main contribution stays untouched and still owed.
  OwnedTensor snapshot(const LayerOutput& h, ForwardBatch& batch) const;

  /// Hands the output and residual on: completes owed work unless `options` keeps it. Does not
  /// apply the update and does not close the stream (release it through the ForwardBatch).
  FinishedOutput finish(const LayerOutput& h, ForwardBatch& batch, FinishOptions options = {});

 private:
  LayerOutput issue(const Tensor& value, bool owed) const;
  void next_generation() { ++stamp_.generation; }
  void run_owed(ForwardBatch& batch);

  State state_ = State::initial;
  uint32_t id_;
  StreamStamp stamp_;
  bool has_residual_ = false;
  Tensor residual_;
  Contribution pending_;
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);
};

}  // namespace seam::residual
