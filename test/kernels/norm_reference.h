// Test support: host tensors filled with random activations, and a straightforward reference of
// residual add + RMSNorm written from the spec's order (§5.2), independent of kernels/norm.
#pragma once

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "layouts/element_values.h"
#include "seam/dtype.h"
#include "seam/tensor.h"

namespace seam::test {

/// Element r,c of a host tensor (f32, bf16 or f16) as float.
inline float get(const Tensor& t, int64_t r, int64_t c) {
  return static_cast<float>(element_value(t.row(r), static_cast<size_t>(c), t.dtype));
}

/// Stores v rounded to the tensor's dtype.
inline void set(const Tensor& t, int64_t r, int64_t c, float v) {
  set_element_value(t.row(r), static_cast<size_t>(c), t.dtype, v);
}

/// v rounded to dtype (f32, bf16 or f16) and back.
inline float round_to(DType dtype, float v) { return static_cast<float>(as_element(v, dtype)); }

/// A host tensor with its storage; row_stride may exceed cols to exercise strided rows.
struct HostTensor {
  Buffer storage;
  Tensor view;
  HostTensor(DType dtype, int64_t rows, int64_t cols, int64_t row_stride = -1) {
    if (row_stride < 0) row_stride = cols;
    storage = Buffer(static_cast<size_t>(std::max<int64_t>(rows * row_stride, 1)) * dtype_size(dtype));
    view = Tensor{storage.data(), dtype, Device::cpu(), rows, cols, row_stride};
  }
  HostTensor(const HostTensor& other) : HostTensor(other.view.dtype, other.view.rows, other.view.cols, other.view.row_stride) {
    std::memcpy(storage.data(), other.storage.data(), storage.bytes());
  }
  void fill_random(std::mt19937& rng, float lo = -2.0f, float hi = 2.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    for (int64_t r = 0; r < view.rows; ++r)
      for (int64_t c = 0; c < view.cols; ++c) set(view, r, c, d(rng));
  }
  void fill(float v) {
    for (int64_t r = 0; r < view.rows; ++r)
      for (int64_t c = 0; c < view.cols; ++c) set(view, r, c, v);
  }
  float at(int64_t r, int64_t c) const { return get(view, r, c); }
};

/// The reference's result for one row: the rounded new residual and the output before rounding.
struct RefRow {
  std::vector<float> residual;  ///< rounded to the I/O dtype
  std::vector<float> out;       ///< rounded to the I/O dtype
};

/// Reference add + RMSNorm for one row of FP32 sums x (already summed in FP32 by the caller,
/// in the spec's order). weight[c] is the FP32 factor (w, or 1 + w for Gemma).
inline RefRow reference_norm_row(const std::vector<float>& x, const std::vector<float>& weight, float eps,
                                 DType io) {
  RefRow row;
  // The mean of squares of the FP32 sums, accumulated in double so the reference's own summation
  // error stays below the kernel's (the spec fixes FP32 for the variance, not an order).
  double square_sum = 0.0;
  for (float v : x) square_sum += static_cast<double>(v) * v;
  const float variance = static_cast<float>(square_sum / static_cast<double>(x.size()));
  const float inv = 1.0f / std::sqrt(variance + eps);
  for (size_t c = 0; c < x.size(); ++c) {
    row.residual.push_back(round_to(io, x[c]));
    row.out.push_back(round_to(io, (x[c] * inv) * weight[c]));
  }
  return row;
}

/// Distance in units in the last place of dtype at the magnitude of `want` (float-level check
/// that allows the kernel's different FP32 summation order of the variance).
inline double ulps(DType dtype, float got, float want) {
  const int mantissa_bits = dtype == DType::bf16 ? 8 : dtype == DType::f16 ? 11 : 24;
  int exponent = 0;
  std::frexp(std::max(std::fabs(want), 1e-30f), &exponent);
  const double ulp = std::ldexp(1.0, exponent - mantissa_bits);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

}  // namespace seam::test
