// What a boundary's norm reads: the RMSNorm's weight and epsilon, and the per-token FP8 rows a
// quantised read writes (the fused device calls and the host kernels take both).
#pragma once

#include <cstdint>

#include "seam/tensor.h"

namespace seam::kernels {

/// How the stored weight scales the normalised row.
enum class NormWeight : uint8_t {
  plain,  ///< y · w (RMSNorm)
  gemma,  ///< y · (1 + w), the offset folded in FP32 (GemmaRMSNorm)
};

/// The norm's parameters: a weight row of `cols` elements (fp32/bf16/fp16) and epsilon.
struct RmsNormSpec {
  const void* weight = nullptr;
  DType weight_dtype = DType::f32;
  NormWeight form = NormWeight::plain;
  float eps = 1e-6f;
};

/// Smallest per-token scale (keeps an all-zero row finite).
inline constexpr float kFp8MinScale = 1.0f / (448.0f * 512.0f);

/// The quantised compute input: q (rows x cols, DType::fp8_e4m3) and one FP32 scale per row.
struct Fp8Rows {
  Tensor values;
  float* scales = nullptr;
};

}  // namespace seam::kernels
