#include "test/collectives/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

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

double input_value(DType dtype, int rank, size_t j, bool fractional) {
  double v = fractional ? 4.0 * std::sin(0.37 * static_cast<double>(j) + rank)
                        : static_cast<double>((j * 7 + static_cast<size_t>(rank) * 13) % 17) - 8;
  // Round through the dtype, so the reference reduces exactly what the rank holds.
  char stored[8];
  set_element(stored, 0, dtype, v);
  return get_element(stored, 0, dtype);
}

std::vector<char> make_input(DType dtype, size_t count, int rank, bool fractional, size_t first) {
  std::vector<char> data(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i)
    set_element(data.data(), i, dtype, input_value(dtype, rank, first + i, fractional));
  return data;
}

double apply_op(ReduceOp op, double a, double b) {
  return op == ReduceOp::sum ? a + b : op == ReduceOp::max ? std::max(a, b) : std::min(a, b);
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
