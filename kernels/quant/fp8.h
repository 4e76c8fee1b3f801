// FP8 E4M3 ("e4m3fn": bias 7, no infinities, 0x7F/0xFF are NaN, largest finite 448) on the host.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace seam::kernels {

/// Largest finite E4M3 value.
inline constexpr float kFp8E4m3Max = 448.0f;

/// float -> E4M3, round-to-nearest-even, saturating to ±448 (NaN stays NaN).
inline uint8_t float_to_fp8_e4m3(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return sign | 0x7F;
  if (a >= kFp8E4m3Max) return sign | 0x7E;
  if (a < 0x1p-6f) {
    // Subnormal: the value in units of 2^-9 is the encoding; 8 rounds up into the smallest normal.
    return sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9f));
  }
  // Normal: round the 23-bit mantissa to 3 bits (ties to even), then rebias 127 -> 7.
  uint32_t u = std::bit_cast<uint32_t>(a);
  u += 0x7FFFFu + ((u >> 20) & 1u);
  return sign | static_cast<uint8_t>((u >> 20) - ((127u - 7u) << 3));
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
