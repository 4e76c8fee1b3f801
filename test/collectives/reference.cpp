#include "test/collectives/reference.h"
#include "layouts/element_values.h"

#include <cmath>

namespace seam::test {

double input_value(DType dtype, int rank, size_t j, bool fractional) {
  double v = fractional ? 4.0 * std::sin(0.37 * static_cast<double>(j) + rank)
                        : static_cast<double>((j * 7 + static_cast<size_t>(rank) * 13) % 17) - 8;
  return as_element(v, dtype);  // so the reference reduces exactly what the rank holds
}

std::vector<char> make_input(DType dtype, size_t count, int rank, bool fractional, size_t first) {
  std::vector<char> data(count * dtype_size(dtype));
  for (size_t i = 0; i < count; ++i)
    set_element_value(data.data(), i, dtype, input_value(dtype, rank, first + i, fractional));
  return data;
}

long first_mismatch(const void* actual, const std::vector<double>& expected, DType dtype,
                    double tolerance) {
  for (size_t i = 0; i < expected.size(); ++i) {
    double a = element_value(actual, i, dtype);
    if (std::fabs(a - expected[i]) > tolerance * (1.0 + std::fabs(expected[i])))
      return static_cast<long>(i);
  }
  return -1;
}

}  // namespace seam::test
