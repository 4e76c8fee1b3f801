// Element types Seam moves and reduces, and the scalar conversions every layer shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <bit>
#include <cstring>
#include <optional>
#include <string_view>

#include "seam/detail/f16_soft.h"

namespace seam {

/// Element type of a buffer. bf16/f16 are reduced with FP32 accumulation.
enum class DType : uint8_t { f32, f64, bf16, f16, i32, u8, fp8_e4m3 };

/// Reduction applied by all-reduce / reduce-scatter.
enum class ReduceOp : uint8_t { sum, max, min };

/// Bytes per element.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64: return 8;
    case DType::f32:
    case DType::i32: return 4;
    case DType::bf16:
    case DType::f16: return 2;
    case DType::u8:
    case DType::fp8_e4m3: return 1;
  }
  return 0;
}

/// Short name as nccl-tests prints it ("float", "bfloat16", ...).
std::string_view dtype_name(DType t);
/// Parses a name (nccl-tests' or Seam's short form: float/f32/fp32/float32, bfloat16/bf16,
/// half/f16/fp16/float16, double/f64/fp64/float64, int32/i32/int, uint8/u8, fp8_e4m3/fp8);
/// nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view name);
/// "sum", "max", "min".
std::string_view reduce_op_name(ReduceOp op);
/// Parses "sum"/"max"/"min".
std::optional<ReduceOp> parse_reduce_op(std::string_view name);

/// bfloat16 <-> float, round-to-nearest-even (NaN stays NaN).
inline float bf16_to_float(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// IEEE half <-> float, round-to-nearest-even.
#ifdef __FLT16_MANT_DIG__  // the compiler has _Float16 (GCC 12; clang 15 and later on x86-64)
inline float f16_to_float(uint16_t h) { return static_cast<float>(std::bit_cast<_Float16>(h)); }
inline uint16_t float_to_f16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
#else
inline float f16_to_float(uint16_t h) { return detail::f16_to_float_soft(h); }
inline uint16_t float_to_f16(float f) { return detail::float_to_f16_soft(f); }
#endif

}  // namespace seam
