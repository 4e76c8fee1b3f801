#include "kernels/quant/norm_quant.h"

#include <algorithm>
#include <cmath>

#include "kernels/norm/norm_rows.h"
#include "kernels/quant/fp8.h"

namespace seam::kernels {
namespace {

void run_norm_fp8(const detail::NormInputs& in, const RmsNormSpec& norm, const Fp8Rows& out) {
  detail::validate(in, norm, out.values, DType::fp8_e4m3);
  if (out.values.rows > 0 && !out.scales) throw ValueError("norm kernel: the FP8 output has no scales");
  dispatch_io(in.partials[0].dtype, [&](auto io) {
    using Io = decltype(io);
    detail::for_each_normed_row<Io>(in, norm, [&](int64_t r, float* y, float inv, const float* w) {
      const int64_t cols = out.values.cols;
      float absmax = 0.0f;
      for (int64_t c = 0; c < cols; ++c) {
        y[c] = Io::load(Io::store((y[c] * inv) * w[c]));  // the activation-dtype norm output the reference quantises
        absmax = std::max(absmax, std::fabs(y[c]));
      }
      const float scale = std::max(absmax / kFp8E4m3Max, kFp8MinScale);
      const float inverse = 1.0f / scale;
      auto* q = static_cast<uint8_t*>(out.values.row(r));
      for (int64_t c = 0; c < cols; ++c)
        q[c] = float_to_fp8_e4m3(std::clamp(y[c] * inverse, -kFp8E4m3Max, kFp8E4m3Max));
      out.scales[r] = scale;
    });
  });
}

}  // namespace

void rms_norm_fp8(const Tensor& x, const RmsNormSpec& norm, const Fp8Rows& out) {
  run_norm_fp8({.partials = {&x, 1}}, norm, out);
}

void add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                      const Fp8Rows& out) {
  run_norm_fp8({.partials = {&x, 1}, .residual = &residual, .extra = extra}, norm, out);
}

}  // namespace seam::kernels
