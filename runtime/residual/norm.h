// RmsNorm: a consumer's norm module (weight, epsilon, weight form) and the storage its reads write
// into. The normalised compute input lands in the norm's own workspace, valid until the norm's next
// call (a layer calls each norm once per forward); the workspace grows on demand and is reused.
#pragma once

#include <cstdint>

#include "kernels/norm/rms_norm.h"
#include "kernels/quant/norm_quant.h"
#include "seam/tensor.h"
#include "runtime/residual/storage.h"

namespace seam::residual {

class RmsNorm {
 public:
  /// weight: one row of `hidden` elements (fp32/bf16/fp16) in the memory the norm's inputs
  /// will be in (host, or the CUDA device of device tensors); it must outlive the norm.
  RmsNorm(const Tensor& weight, float eps, kernels::NormWeight form = kernels::NormWeight::plain);
  RmsNorm(const RmsNorm&) = delete;
  RmsNorm& operator=(const RmsNorm&) = delete;

  const kernels::RmsNormSpec& spec() const { return spec_; }
  int64_t hidden() const { return hidden_; }
  /// Where the weight is (the norm reads rows in that memory only).
  const Device& device() const { return device_; }
  /// Whether this is the Gemma (1 + w) form a fused finalize needs (the guide's gemma_weight).
  bool gemma() const { return spec_.form == kernels::NormWeight::gemma; }

  /// out = norm(x), into the workspace.
  Tensor apply(const Tensor& x);
  /// residual := x + residual [+ extra] (in place); returns the norm of the FP32 sum (workspace).
  Tensor add_apply(const Tensor& x, const Tensor& residual, const Tensor* extra = nullptr);
  /// The per-token FP8 forms of apply / add_apply (values and scales in the workspace).
  kernels::Fp8Rows apply_fp8(const Tensor& x);
  kernels::Fp8Rows add_apply_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra = nullptr);

 private:
  Tensor output(const Tensor& x, DType dtype);
  kernels::Fp8Rows fp8_output(const Tensor& x);

  kernels::RmsNormSpec spec_;
  int64_t hidden_;
  Device device_;
  Storage out_;
  Storage scales_;
};

}  // namespace seam::residual
