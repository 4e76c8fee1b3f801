// LayerOutput: the value every boundary call hands the model and the next call takes back — a
// complete tensor, or an opaque OwedOutput handle for a contribution that still owes work (it gives
// no tensor access). Each value carries the identity of the stream state that issued it (stream id +
// generation); the stream accepts only the value of its current state, so a rebound tensor (a
// tensor the model rewrapped, e.g. after copying it), a stale handle or another microbatch's output
// is rejected with an integer compare. A LayerOutput is a value: a plain C++ copy of it is the same
// value (as passing the same Python object twice), not a new identity.
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

}  // namespace seam::residual
