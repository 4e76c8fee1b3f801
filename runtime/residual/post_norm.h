// Post-norm residual (EXAONE 4, §5.3): the update adds the normalised output to the residual,
// residual' = residual + norm(h) (the norm's output rounded first, as the reference's separate
// norm then add); the read is the identity, the compute input is the residual itself.
#pragma once

#include "runtime/residual/update_read.h"

namespace seam::residual {

/// residual' = residual + post_norm(h). Nonlinear; at the producer when `at_producer`.
class PostNormUpdate final : public StageUpdate {
 public:
  PostNormUpdate(RmsNorm& post_norm, bool at_producer);
  const char* name() const override { return "post-norm"; }
  Tensor update(const Tensor& h, const Tensor& residual) const override;

 private:
  RmsNorm& post_norm_;
};

/// The identity read: input = residual (after the producer's update).
const StageRead& plain_read();

}  // namespace seam::residual
