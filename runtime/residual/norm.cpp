#include <cstdint>
#include "runtime/residual/norm.h"

#include <string>

#include "seam/errors.h"

namespace seam::residual {

RmsNorm::RmsNorm(const Tensor& weight, float eps, kernels::NormWeight form)
    : spec_{weight.data, weight.dtype, form, eps}, hidden_(weight.cols), device_(weight.device) {
  if (weight.rows != 1) throw ValueError("a norm weight is one row of hidden elements");
}

// The workspace for a read of x, in x's memory; the weight must be there too.
Tensor RmsNorm::output(const Tensor& x, DType dtype) {
  if (!(x.device == device_))
    throw ValueError(std::string("RmsNorm: the rows are in ") + (x.device.is_cuda() ? "CUDA" : "host") +
                     " memory and the norm's weight is not (give the norm a weight on the rows' device)");
  const size_t bytes = static_cast<size_t>(x.rows * hidden_) * dtype_size(dtype);
  if (!out_.fits(bytes, device_)) out_ = Storage(bytes, device_);
  return Tensor::contiguous(out_.data(), dtype, x.rows, hidden_, device_);
}

kernels::Fp8Rows RmsNorm::fp8_output(const Tensor& x) {
  const size_t bytes = static_cast<size_t>(x.rows) * sizeof(float);
  Tensor values = output(x, DType::fp8_e4m3);
  if (!scales_.fits(bytes, device_)) scales_ = Storage(bytes, device_);
  return {values, static_cast<float*>(scales_.data())};
}

Tensor RmsNorm::apply(const Tensor& x) {
  Tensor out = output(x, x.dtype);
  kernels::rms_norm(x, spec_, out);
  return out;
}

Tensor RmsNorm::add_apply(const Tensor& x, const Tensor& residual, const Tensor* extra) {
  Tensor out = output(x, x.dtype);
  kernels::add_rms_norm(x, residual, extra, spec_, out);
  return out;
}

kernels::Fp8Rows RmsNorm::apply_fp8(const Tensor& x) {
  kernels::Fp8Rows out = fp8_output(x);
  kernels::rms_norm_fp8(x, spec_, out);
  return out;
}

kernels::Fp8Rows RmsNorm::add_apply_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra) {
  kernels::Fp8Rows out = fp8_output(x);
  kernels::add_rms_norm_fp8(x, residual, extra, spec_, out);
  return out;
}

}  // namespace seam::residual
