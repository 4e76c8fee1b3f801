#include <cstdint>
#include "kernels/quant/norm_quant.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/device/device_ops.h"
#include "kernels/norm/norm_rows.h"
#include "kernels/quant/fp8.h"

namespace seam::kernels {
namespace {

void run_norm_fp8(const detail::NormInputs& in, const RmsNormSpec& norm, const Fp8Rows& out) {
  detail::validate(in, norm, out.values, DType::fp8_e4m3);
  if (out.values.rows > 0 && !out.scales) throw ValueError("norm kernel: the FP8 output has no scales");
  detail::run_rows(in.partials[0].dtype, [&](auto io) {
    using Io = decltype(io);
    detail::for_each_normed_row<Io>(in, norm, [&](int64_t r, float* __restrict y, float inv, const float* __restrict w) {
      const int64_t cols = out.values.cols;
      // absmax over the bit patterns of |y| (ordered like the values for non-NaN floats), an integer
      // max the compiler vectorises.
      uint32_t absmax_bits = 0;
      for (int64_t c = 0; c < cols; ++c) {
        y[c] = Io::load(Io::store((y[c] * inv) * w[c]));  // the activation-dtype norm output the reference quantises
        absmax_bits = std::max(absmax_bits, std::bit_cast<uint32_t>(y[c]) & 0x7FFFFFFFu);
      }
      const float scale = std::max(std::bit_cast<float>(absmax_bits) / kFp8E4m3Max, kFp8MinScale);
      const float inverse = 1.0f / scale;
      auto* __restrict q = static_cast<uint8_t*>(out.values.row(r));
      for (int64_t c = 0; c < cols; ++c) q[c] = float_to_fp8_e4m3(y[c] * inverse);  // saturates at ±448
      out.scales[r] = scale;
    });
  });
}

}  // namespace

void rms_norm_fp8(const Tensor& x, const RmsNormSpec& norm, const Fp8Rows& out) {
  if (any_on_device({&x, &out.values})) {
    require_same_device({&out.values}, x, "rms_norm_fp8");
    return device_ops().rms_norm_fp8(x, norm, out);
  }
  run_norm_fp8({.partials = {&x, 1}}, norm, out);
}

void add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                      const Fp8Rows& out) {
  if (any_on_device({&x, &residual, extra, &out.values})) {
    require_same_device({&residual, extra, &out.values}, x, "add_rms_norm_fp8");
    return device_ops().add_rms_norm_fp8(x, residual, extra, norm, out);
  }
  run_norm_fp8({.partials = {&x, 1}, .residual = &residual, .extra = extra}, norm, out);
}

}  // namespace seam::kernels
