// FP8 E4M3 conversion and the per-token quantised norm read.
#include <cstdint>
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "kernels/quant/fp8.h"
#include "kernels/quant/norm_quant.h"
#include "test/kernels/isa.h"
#include "test/kernels/norm_reference.h"

using namespace seam;
using seam::test::HostTensor;

namespace {

// E4M3 decoded from its definition: sign, 4 exponent bits (bias 7), 3 mantissa bits; S.1111.111
// is NaN; exponent 0 is subnormal.
double decode_e4m3(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double magnitude = e == 0 ? m / 8.0 * std::ldexp(1.0, -6) : (1.0 + m / 8.0) * std::ldexp(1.0, e - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

// Nearest finite code by exhaustive search, ties to the even code, saturating at ±448.
uint8_t nearest_e4m3(float f) {
  int best = -1;
  double best_distance = 0;
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7F) == 0x7F) continue;
    if (std::signbit(decode_e4m3(code)) != std::signbit(f) && decode_e4m3(code) != 0) continue;
    if ((code & 0x80) != (std::signbit(f) ? 0x80 : 0)) continue;
    const double distance = std::fabs(decode_e4m3(code) - f);
    if (best < 0 || distance < best_distance || (distance == best_distance && (code & 1) == 0)) {
      best = code;
      best_distance = distance;
    }
  }
  return static_cast<uint8_t>(best);
}

}  // namespace

TEST_CASE("E4M3 decoding covers every code") {
  for (int code = 0; code < 256; ++code) {
    const float f = kernels::fp8_e4m3_to_float(static_cast<uint8_t>(code));
    if ((code & 0x7F) == 0x7F) {
      CHECK(std::isnan(f));
    } else {
      REQUIRE(static_cast<double>(f) == decode_e4m3(code));
      CHECK(kernels::float_to_fp8_e4m3(f) == code);  // exact round trip
    }
  }
}

TEST_CASE("E4M3 encoding rounds to nearest even and saturates") {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> exponent(-12.0f, 10.0f);
  for (int i = 0; i < 20000; ++i) {
    const float f = (i & 1 ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    REQUIRE(kernels::float_to_fp8_e4m3(f) == nearest_e4m3(std::min(std::fabs(f), 448.0f) * (f < 0 ? -1.0f : 1.0f)));
  }
  // Midpoints between neighbouring codes go to the even code.
  for (int code = 0; code < 0x7D; ++code) {
    const float mid = static_cast<float>((decode_e4m3(code) + decode_e4m3(code + 1)) / 2);
    REQUIRE(kernels::float_to_fp8_e4m3(mid) == ((code & 1) ? code + 1 : code));
  }
  CHECK(kernels::float_to_fp8_e4m3(1e6f) == 0x7E);
  CHECK(kernels::float_to_fp8_e4m3(-1e6f) == 0xFE);
  CHECK(kernels::float_to_fp8_e4m3(std::numeric_limits<float>::infinity()) == 0x7E);
  CHECK((kernels::float_to_fp8_e4m3(std::nanf("")) & 0x7F) == 0x7F);
  CHECK(kernels::float_to_fp8_e4m3(0x1p-11f) == 0);
}

TEST_CASE("norm + FP8 per-token read quantises the unfused norm output") {
  std::mt19937 rng(9);
  seam::test::for_each_isa([&] {
    for (DType io : {DType::f32, DType::bf16, DType::f16})
      for (bool with_residual : {false, true}) {
        CAPTURE(dtype_name(io));
        const int64_t rows = 5, cols = 257;
        HostTensor h(io, rows, cols), residual(io, rows, cols), weight(io, 1, cols);
        h.fill_random(rng);
        residual.fill_random(rng, -4.0f, 4.0f);
        weight.fill_random(rng);
        seam::test::set(h.view, 2, 0, 0.0f);
        HostTensor h2 = h, residual2 = residual, normed(io, rows, cols), q(DType::fp8_e4m3, rows, cols);
        HostTensor zero_row(io, 1, cols), zero_q(DType::fp8_e4m3, 1, cols);
        std::vector<float> scales(rows), zero_scale(1);
        kernels::RmsNormSpec spec{weight.view.data, io, kernels::NormWeight::plain, 1e-6f};
        if (with_residual) {
          kernels::add_rms_norm_fp8(h.view, residual.view, nullptr, spec, {q.view, scales.data()});
          kernels::add_rms_norm(h2.view, residual2.view, nullptr, spec, normed.view);
        } else {
          kernels::rms_norm_fp8(h.view, spec, {q.view, scales.data()});
          kernels::rms_norm(h2.view, spec, normed.view);
        }
        for (int64_t r = 0; r < rows; ++r) {
          float absmax = 0;
          for (int64_t c = 0; c < cols; ++c) {
            REQUIRE(residual.at(r, c) == residual2.at(r, c));
            absmax = std::max(absmax, std::fabs(normed.at(r, c)));
          }
          const float scale = std::max(absmax / 448.0f, 1.0f / (448.0f * 512.0f));
          REQUIRE(scales[r] == scale);
          const auto* codes = static_cast<const uint8_t*>(q.view.row(r));
          for (int64_t c = 0; c < cols; ++c) REQUIRE(codes[c] == nearest_e4m3(normed.at(r, c) * (1.0f / scale)));
        }
      }
  });
}
