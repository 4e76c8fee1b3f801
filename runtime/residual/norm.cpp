#include <cstdint>
#include "runtime/residual/norm.h"

#include "layouts/errors.h"

namespace seam::residual {

RmsNorm::RmsNorm(const Tensor& weight, float eps, kernels::NormWeight form)
    : spec_{weight.data, weight.dtype, form, eps}, hidden_(weight.cols) {
  if (weight.rows != 1) throw ValueError("a norm weight is one row of hidden elements");
}

Tensor RmsNorm::output(DType dtype, int64_t rows) {
  const size_t bytes = static_cast<size_t>(rows * hidden_) * dtype_size(dtype);
  if (out_.bytes() < bytes) out_ = Buffer(bytes);
  return Tensor::contiguous(out_.data(), dtype, rows, hidden_);
}

kernels::Fp8Rows RmsNorm::fp8_output(int64_t rows) {
  if (scales_.bytes() < static_cast<size_t>(rows) * sizeof(float)) scales_ = Buffer(rows * sizeof(float));
  return {output(DType::fp8_e4m3, rows), static_cast<float*>(scales_.data())};
}

Tensor RmsNorm::apply(const Tensor& x) {
  Tensor out = output(x.dtype, x.rows);
  kernels::rms_norm(x, spec_, out);
  return out;
}

Tensor RmsNorm::add_apply(const Tensor& x, const Tensor& residual, const Tensor* extra) {
  Tensor out = output(x.dtype, x.rows);
  kernels::add_rms_norm(x, residual, extra, spec_, out);
  return out;
}

kernels::Fp8Rows RmsNorm::apply_fp8(const Tensor& x) {
  kernels::Fp8Rows out = fp8_output(x.rows);
  kernels::rms_norm_fp8(x, spec_, out);
  return out;
}

kernels::Fp8Rows RmsNorm::add_apply_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra) {
  kernels::Fp8Rows out = fp8_output(x.rows);
  kernels::add_rms_norm_fp8(x, residual, extra, spec_, out);
  return out;
}

}  // namespace seam::residual
