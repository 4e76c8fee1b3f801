#include <cstdint>
#include "tools/sim/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/sim/model.h"

namespace seam::sim {

Tolerance Tolerance::for_dtype(DType dtype, int64_t stages) {
  if (dtype == DType::bf16) return {0x1p-6, std::max(0x1p-5, 0x1p-7 * std::sqrt(static_cast<double>(stages)))};
  return {1e-5, 1e-5};
}

std::string Tolerance::describe() const {
  if (rtol == 0 && row_tol == 0) return "bit-exact (got == want)";
  char buf[128];
  std::snprintf(buf, sizeof buf, "|got - want| <= %.3g * |want| + %.3g * max|want row|", rtol, row_tol);
  return buf;
}

void Comparison::merge(const Comparison& o) {
  checked += o.checked;
  mismatched += o.mismatched;
  max_abs_error = std::max(max_abs_error, o.max_abs_error);
  max_row_error = std::max(max_row_error, o.max_row_error);
  if (first_mismatch.empty()) first_mismatch = o.first_mismatch;
  tokens.insert(tokens.end(), o.tokens.begin(), o.tokens.end());
}

Comparison compare_rows(const Tensor& got, const Tensor& want, std::span<const int64_t> ids, Tolerance tol) {
  Comparison c;
  if (got.rows != static_cast<int64_t>(ids.size())) {
    c.mismatched = 1;
    c.first_mismatch = std::to_string(got.rows) + " rows for " + std::to_string(ids.size()) + " token ids";
    return c;
  }
  for (int64_t r = 0; r < got.rows; ++r) {
    const int64_t token = ids[static_cast<size_t>(r)];
    if (token < 0) continue;
    c.tokens.push_back(token);
    double row_max = 0;
    for (int64_t col = 0; col < got.cols; ++col) row_max = std::max(row_max, std::fabs(double(load(want, token, col))));
    for (int64_t col = 0; col < got.cols; ++col) {
      const double g = load(got, r, col), w = load(want, token, col);
      const double err = std::fabs(g - w);
      ++c.checked;
      c.max_abs_error = std::max(c.max_abs_error, err);
      c.max_row_error = std::max(c.max_row_error, row_max > 0 ? err / row_max : err);
      if (!(err <= tol.rtol * std::fabs(w) + tol.row_tol * row_max)) {
        if (c.mismatched++ == 0) {
          char buf[128];
          std::snprintf(buf, sizeof buf, "token %lld col %lld: got %.8g, want %.8g", static_cast<long long>(token),
                        static_cast<long long>(col), g, w);
          c.first_mismatch = buf;
        }
      }
    }
  }
  return c;
}

}  // namespace seam::sim
