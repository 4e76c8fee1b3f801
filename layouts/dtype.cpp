#include <cstdint>
#include "layouts/element_values.h"
#include "seam/dtype.h"

#include <algorithm>
#include <string>

#include "seam/errors.h"

namespace seam {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::bf16: return "bfloat16";
    case DType::f16: return "half";
    case DType::i32: return "int32";
    case DType::u8: return "uint8";
    case DType::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  if (n == "float" || n == "f32" || n == "fp32" || n == "float32") return DType::f32;
  if (n == "double" || n == "f64" || n == "fp64" || n == "float64") return DType::f64;
  if (n == "bfloat16" || n == "bf16") return DType::bf16;
  if (n == "half" || n == "f16" || n == "fp16" || n == "float16") return DType::f16;
  if (n == "int32" || n == "i32" || n == "int") return DType::i32;
  if (n == "uint8" || n == "u8") return DType::u8;
  if (n == "fp8_e4m3" || n == "fp8") return DType::fp8_e4m3;
  return std::nullopt;
}

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

std::optional<ReduceOp> parse_reduce_op(std::string_view n) {
  if (n == "sum") return ReduceOp::sum;
  if (n == "max") return ReduceOp::max;
  if (n == "min") return ReduceOp::min;
  return std::nullopt;
}

namespace {

[[noreturn]] void no_scalar_view(DType dtype) {
  throw ValueError("seam: " + std::string(dtype_name(dtype)) +
                   " elements have no scalar view here");
}

}  // namespace

double element_value(const void* buffer, size_t i, DType dtype) {
  switch (dtype) {
    case DType::f32:
      return static_cast<const float*>(buffer)[i];
    case DType::f64:
      return static_cast<const double*>(buffer)[i];
    case DType::i32:
      return static_cast<const int32_t*>(buffer)[i];
    case DType::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(buffer)[i]);
    case DType::f16:
      return f16_to_float(static_cast<const uint16_t*>(buffer)[i]);
    case DType::u8:
      return static_cast<const uint8_t*>(buffer)[i];
    case DType::fp8_e4m3:
      break;
  }
  no_scalar_view(dtype);
}

void set_element_value(void* buffer, size_t i, DType dtype, double value) {
  switch (dtype) {
    case DType::f32:
      static_cast<float*>(buffer)[i] = static_cast<float>(value);
      return;
    case DType::f64:
      static_cast<double*>(buffer)[i] = value;
      return;
    case DType::i32:
      static_cast<int32_t*>(buffer)[i] = static_cast<int32_t>(value);
      return;
    case DType::bf16:
      static_cast<uint16_t*>(buffer)[i] = float_to_bf16(static_cast<float>(value));
      return;
    case DType::f16:
      static_cast<uint16_t*>(buffer)[i] = float_to_f16(static_cast<float>(value));
      return;
    case DType::u8:  // through int64_t: a negative double to uint8_t would be undefined
      static_cast<uint8_t*>(buffer)[i] = static_cast<uint8_t>(static_cast<int64_t>(value));
      return;
    case DType::fp8_e4m3:
      break;
  }
  no_scalar_view(dtype);
}

double as_element(double value, DType dtype) {
  alignas(double) unsigned char stored[sizeof(double)];
  set_element_value(stored, 0, dtype, value);
  return element_value(stored, 0, dtype);
}

double apply_reduce_op(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::sum:
      return a + b;
    case ReduceOp::max:
      return std::max(a, b);
    case ReduceOp::min:
      return std::min(a, b);
  }
  return a + b;
}

}  // namespace seam
