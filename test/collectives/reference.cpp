#include "test/collectives/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace seam::test {

double get_element(const void* buffer, size_t i, DType dtype) {
  switch (dtype) {
    case DType::f32: return static_cast<const float*>(buffer)[i];
    case DType::f64: return static_cast<const double*>(buffer)[i];
    case DType::i32: return static_cast<const int32_t*>(buffer)[i];
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(buffer)[i]);
    case DType::f16: return f16_to_float(static_cast<const uint16_t*>(buffer)[i]);
    default: return static_cast<const uint8_t*>(buffer)[i];
  }
}

void set_element(void* buffer, size_t i, DType dtype, double value) {
  switch (dtype) {
    case DType::f32: static_cast<float*>(buffer)[i] = static_cast<float>(value); break;
    case DType::f64: static_cast<double*>(buffer)[i] = value; break;
    case DType::i32: static_cast<int32_t*>(buffer)[i] = static_cast<int32_t>(value); break;
    case DType::bf16:
      static_cast<uint16_t*>(buffer)[i] = float_to_bf16(static_cast<float>(value));
      break;
    case DType::f16:
      static_cast<uint16_t*>(buffer)[i] = float_to_f16(static_cast<float>(value));
      break;
    default: static_cast<uint8_t*>(buffer)[i] = static_cast<uint8_t>(value); break;
  }
}

std::vector<char> integer_input(DType dtype, size_t count, int rank, int salt) {
  std::vector<char> data(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i)
    set_element(data.data(), i, dtype,
                static_cast<double>((i * 7 + static_cast<size_t>(rank) * 13 + salt * 5) % 17) - 8);
  return data;
}

std::vector<char> fractional_input(DType dtype, size_t count, int rank) {
  std::vector<char> data(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i)
    set_element(data.data(), i, dtype, 4.0 * std::sin(0.37 * static_cast<double>(i) + rank));
  return data;
}

double reduce_reference(const std::vector<std::vector<char>>& inputs, size_t i, DType dtype,
                        ReduceOp op) {
  double acc = get_element(inputs[0].data(), i, dtype);
  for (size_t r = 1; r < inputs.size(); ++r) {
    double x = get_element(inputs[r].data(), i, dtype);
    acc = op == ReduceOp::sum ? acc + x : op == ReduceOp::max ? std::max(acc, x) : std::min(acc, x);
  }
  return acc;
}

long first_mismatch(const void* actual, const std::vector<double>& expected, DType dtype,
                    double tolerance) {
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = get_element(actual, i, dtype);
    if (std::fabs(a - expected[i]) > tolerance * (1.0 + std::fabs(expected[i])))
      return static_cast<long>(i);
  }
  return -1;
}

}  // namespace seam::test
