// The norm + FP8 per-token quantised read (NORM_QUANT_READ's "fp8_per_token" format): the
// add+RMSNorm of kernels/norm/rms_norm.h, its output rounded to the activation dtype as the
// unfused norm returns it, then quantised per token:
//   scale = max(absmax(row) / 448, 1 / (448 · 512));  q = e4m3(clamp(y · (1 / scale), ±448))
// so dequantised q · scale approximates the unfused norm output.
#pragma once

#include "kernels/norm/rms_norm.h"

namespace seam::kernels {

/// out = per-token FP8 of RMSNorm(x) (a read without residual).
void rms_norm_fp8(const Tensor& x, const RmsNormSpec& norm, const Fp8Rows& out);

/// residual := x + residual [+ extra] (rounded, in place); out = per-token FP8 of the norm of
/// the unrounded FP32 sum. extra may be null.
void add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                      const Fp8Rows& out);

}  // namespace seam::kernels
