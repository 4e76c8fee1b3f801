// FP8 E4M3 ("e4m3fn": bias 7, no infinities, 0x7F/0xFF are NaN, largest finite 448) on the host.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace seam::kernels {

/// Largest finite E4M3 value.
inline constexpr float kFp8E4m3Max = 448.0f;

/// float -> E4M3, round-to-nearest-even, saturating to ±448 (NaN stays NaN). Branch-free, so
/// loops over it vectorise.
inline uint8_t float_to_fp8_e4m3(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const float magnitude_in = std::fabs(f);
  const float a = magnitude_in > kFp8E4m3Max ? kFp8E4m3Max : magnitude_in;  // a NaN passes: handled below
  const uint32_t u = std::bit_cast<uint32_t>(a);
  // Normal: round the 23-bit mantissa to 3 bits (ties to even), then rebias 127 -> 7.
  const uint32_t normal = ((u + 0x7FFFFu + ((u >> 20) & 1u)) >> 20) - ((127u - 7u) << 3);
  // Subnormal: the value in units of 2^-9 is the encoding (8 rounds up into the smallest normal);
  // adding and removing 2^23 rounds to an integer, ties to even, in the default rounding mode.
  // Converted only below 2^-6: a NaN (which passes the clamp) converted to int32 is undefined behaviour.
  const uint32_t magnitude =
      a < 0x1p-6f ? static_cast<uint32_t>(static_cast<int32_t>((a * 0x1p9f + 0x1p23f) - 0x1p23f)) : normal;
  const bool nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<uint8_t>(sign | (nan ? 0x7Fu : magnitude));
}

/// E4M3 -> float (exact).
inline float fp8_e4m3_to_float(uint8_t v) {
  const float sign = (v & 0x80) ? -1.0f : 1.0f;
  const int exponent = (v >> 3) & 0xF, mantissa = v & 0x7;
  if (exponent == 0xF && mantissa == 0x7) return std::nanf("");
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
}

}  // namespace seam::kernels
