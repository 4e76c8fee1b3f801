// The values an engine passes between boundaries. LayerOutput: what every boundary call hands the
// model and the next call takes back — a complete tensor, or an opaque OwedOutput handle for a
// contribution that still owes work (it gives no tensor access). Each value carries the identity of
// the stream state that issued it (stream id + generation); the stream accepts only the value of its
// current state, so a rebound tensor, a stale handle or another microbatch's output is rejected. A
// plain C++ copy of a LayerOutput is the same value, not a new identity. StageInput: what a
// consumer's read hands compute. ExitFlags: what an open exit scope lets compute skip.
#pragma once

#include <cstdint>

#include "seam/tensor.h"

namespace seam::residual {

/// Which stream, and which of its states, issued a value. Zero: issued by no stream.
struct StreamStamp {
  uint32_t stream = 0;
  uint32_t generation = 0;
  bool operator==(const StreamStamp&) const = default;
};

/// A layer's output as the boundaries hand it on: a complete tensor, or an opaque owed handle.
class LayerOutput {
 public:
  LayerOutput() = default;
  /// A tensor the model produced itself (the embedding, compute output); it has no stream identity,
  /// so only an Initial stream or a producer's finish accepts it.
  explicit LayerOutput(const Tensor& value) : value_(value) {}

  /// Whether this is an OwedOutput handle.
  bool owed() const { return owed_; }
  /// The complete tensor. An OwedOutput has none: TypeError (pass it to the next boundary instead).
  const Tensor& tensor() const;
  /// The stream state that issued this value (zero for a tensor the model produced).
  StreamStamp stamp() const { return stamp_; }

 private:
  friend class ResidualStream;
  static LayerOutput issued(const Tensor& value, StreamStamp stamp, bool owed) {
    LayerOutput out(value);
    out.stamp_ = stamp;
    out.owed_ = owed;
    return out;
  }

  Tensor value_;  ///< the complete value; empty for an owed handle
  StreamStamp stamp_;
  bool owed_ = false;
};

/// A consumer read's compute input: activations, or FP8 values with one FP32 scale per token.
struct StageInput {
  Tensor values;
  const float* scales = nullptr;  ///< set for a quantised read
  /// Whether values are FP8 with per-token scales.
  bool quantized() const { return scales != nullptr; }
};

/// What compute may skip because the boundary completes or carries the work.
struct ExitFlags {
  bool fuse_mlp_allreduce = false;  ///< skip the output all-reduce; the boundary completes or carries it
  bool mlp_reduce_scatter = false;  ///< skip the all-reduce; a boundary reduce-scatter completes it
  bool defer_moe_finalize = false;  ///< a MoE may return a HandoffOutput instead of a tensor
  bool skips_reduction = false;     ///< MixerExit's decision (equals its fuse_mlp_allreduce)

  /// Whether compute must leave its output sum unfinished (row-parallel linear, MoE reduction).
  bool compute_skips_sum() const { return fuse_mlp_allreduce || mlp_reduce_scatter; }
  bool operator==(const ExitFlags&) const = default;
};

/// Publishes `flags` into `slot` for its lifetime and restores the previous value when it ends,
/// also when compute throws. Not copyable or movable: one scope, one restore.
class ScopedExitFlags {
 public:
  ScopedExitFlags(ExitFlags& slot, const ExitFlags& flags) : slot_(slot), saved_(slot) { slot_ = flags; }
  ~ScopedExitFlags() { slot_ = saved_; }
  ScopedExitFlags(const ScopedExitFlags&) = delete;
  ScopedExitFlags& operator=(const ScopedExitFlags&) = delete;

 private:
  ExitFlags& slot_;
  ExitFlags saved_;
};

}  // namespace seam::residual
