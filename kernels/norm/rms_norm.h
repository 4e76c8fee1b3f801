// Residual add + RMSNorm on host buffers, in the reference's exact FP32 order
// (boundary-semantics §5.2):
//   x = f32(h) [+ f32(residual) [+ f32(extra)]];  residual' = round_to_io(x);
//   var = mean(x²) in FP32;  y = x · rsqrt(var + eps) · w;  out = round_to_io(y)
// The normalised output is computed from the unrounded FP32 sum, never from the rounded
// residual. w is the weight in FP32, or (1 + weight) in FP32 for the Gemma form.
#pragma once

#include <cstdint>

#include <span>

#include "seam/norm.h"
#include "seam/tensor.h"

namespace seam::kernels {

/// out = RMSNorm(x) (a read without residual, e.g. at the stack's start). out may alias x.
void rms_norm(const Tensor& x, const RmsNormSpec& norm, const Tensor& out);

/// residual := x + residual [+ extra] rounded to the I/O dtype (in place);
/// out := RMSNorm of the unrounded FP32 sum. extra may be null; out may alias x; the residual must
/// not overlap x.
void add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor* extra,
                  const RmsNormSpec& norm, const Tensor& out);

/// The fused "all-reduce + add + RMSNorm" on host buffers: sum = the FP32 sum of the k partials
/// in the given order, rounded to the I/O dtype as an unfused all-reduce returns it; then
/// add_rms_norm(sum, residual, ...) as above. `partials` may include (or alias) `out`.
/// `reduced_out`, if non-null, receives the rounded sum itself.
void reduce_add_rms_norm(std::span<const Tensor> partials, const Tensor& residual,
                         const RmsNormSpec& norm, const Tensor& out,
                         const Tensor* reduced_out = nullptr);

}  // namespace seam::kernels
