// IEEE half <-> float in integer and float arithmetic, for compilers without the _Float16 type
// (clang before 15 on x86-64; its __fp16 needs compiler-rt, which Debian's clang does not link).
// Bit-exact with GCC's _Float16 conversions: round-to-nearest-even, NaN stays NaN.
#pragma once

#include <bit>
#include <cstdint>

namespace seam::detail {

inline float f16_to_float_soft(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f)  // inf, or NaN made quiet
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u));
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t float_to_f16_soft(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN, quiet
  if (x >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // 2^16 and up: inf
  if (x < 0x38800000u) {
    // Below 2^-14 the half is subnormal: adding 0.5 makes the float's own rounding (to nearest
    // even) drop exactly the bits the half cannot hold.
    const float shifted = std::bit_cast<float>(x) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias the exponent (-112 << 23, mod 2^32) and round half to even
  return static_cast<uint16_t>(sign | (x >> 13));
}

}  // namespace seam::detail
