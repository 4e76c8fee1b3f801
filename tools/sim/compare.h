// Element-wise comparison of a rank's rows with the reference's, under a stated tolerance:
// |got - want| <= atol + rtol * |want|.
#pragma once

#include <cstdint>
#include <string>

#include "layouts/tensor.h"

namespace seam::sim {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  /// fp32: the partial sums and the collectives' reduction order change only the last bits;
  /// bf16: every partial and residual is rounded to bf16 (FP32 accumulation inside each step).
  static Tolerance for_dtype(DType dtype);
  std::string describe() const;
};

struct Comparison {
  int64_t checked = 0;
  int64_t mismatched = 0;
  double max_abs_error = 0;
  std::string first_mismatch;  ///< "row r col c: got x, want y"
  bool ok() const { return mismatched == 0; }
  void merge(const Comparison& other);
};

/// Compares rows [0, rows) of got with rows [want_begin, want_begin + rows) of want.
Comparison compare_rows(const Tensor& got, const Tensor& want, int64_t want_begin, int64_t rows, Tolerance tol);

}  // namespace seam::sim
