#include "tools/sim/compare.h"

#include <cmath>
#include <cstdio>

#include "tools/sim/model.h"

namespace seam::sim {

Tolerance Tolerance::for_dtype(DType dtype) {
  if (dtype == DType::bf16) return {2e-2, 2e-2};
  return {1e-5, 1e-5};
}

std::string Tolerance::describe() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "|got - want| <= %.0e + %.0e * |want|", atol, rtol);
  return buf;
}

void Comparison::merge(const Comparison& o) {
  checked += o.checked;
  mismatched += o.mismatched;
  max_abs_error = std::max(max_abs_error, o.max_abs_error);
  if (first_mismatch.empty()) first_mismatch = o.first_mismatch;
}

Comparison compare_rows(const Tensor& got, const Tensor& want, int64_t want_begin, int64_t rows, Tolerance tol) {
  Comparison c;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < got.cols; ++col) {
      const double g = load(got, r, col), w = load(want, want_begin + r, col);
      const double err = std::fabs(g - w);
      ++c.checked;
      c.max_abs_error = std::max(c.max_abs_error, err);
      if (!(err <= tol.atol + tol.rtol * std::fabs(w))) {
        if (c.mismatched++ == 0) {
          char buf[128];
          std::snprintf(buf, sizeof buf, "row %lld col %lld: got %.8g, want %.8g", static_cast<long long>(want_begin + r),
                        static_cast<long long>(col), g, w);
          c.first_mismatch = buf;
        }
      }
    }
  return c;
}

}  // namespace seam::sim
