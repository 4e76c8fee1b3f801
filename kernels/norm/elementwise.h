// Element-wise helpers of the residual path (device tensors go to kernels/device/device_ops.h): a plain residual add in FP32 rounded
// to the I/O dtype (torch's `a += b` for bf16/fp16), an FP32-weighted combination, and a row copy.
#pragma once

#include <span>

#include "seam/tensor.h"

namespace seam::kernels {

/// dst := round(f32(dst) + f32(src)). Same dtype and shape.
void add_inplace(const Tensor& dst, const Tensor& src);

/// dst := src (same dtype and shape; either may be strided; overlapping rows are not allowed).
void copy(const Tensor& src, const Tensor& dst);

/// t := 0 (rows may be strided).
void zero(const Tensor& t);

/// dst := round(Σ_i weights[i] · f32(srcs[i])), the sum in FP32 in the given order. dst may alias
/// one of srcs (each element is read before it is written).
void weighted_sum(std::span<const Tensor> srcs, std::span<const float> weights, const Tensor& dst);

}  // namespace seam::kernels
