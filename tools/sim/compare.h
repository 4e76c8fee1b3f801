// Element-wise comparison of a rank's rows with the reference's, under a stated tolerance:
//   |got - want| <= rtol * |want| + row_tol * max_j |want[row, j]|
// The second term scales with the row's largest value: rounding a sum of partials (or a residual)
// to the activation dtype errs by a fraction of the largest terms' ulp, not of the element's own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "seam/tensor.h"

namespace seam::sim {

struct Tolerance {
  double rtol = 0;
  double row_tol = 0;
  /// fp32: the partial sums and the collectives' reduction order change only the last bits
  /// (1e-5). bf16 without an exact grid (device runs): every partial, sum and residual is rounded to
  /// bf16, and a parallel run rounds at other points than the reference (partials before their
  /// sum), so each stage adds up to about one bf16 ulp (2^-8 relative) of the row's magnitude and the
  /// differences add like a random walk: row_tol = 2^-7 * sqrt(stages) (at least 2^-5), rtol = 2^-6.
  static Tolerance for_dtype(DType dtype, int64_t stages);
  /// Bit for bit: a run whose sums are all exact (ModelConfig::grid).
  static Tolerance exact() { return {0, 0}; }
  std::string describe() const;
};

struct Comparison {
  int64_t checked = 0;
  int64_t mismatched = 0;
  double max_abs_error = 0;
  double max_row_error = 0;    ///< the largest error relative to its row's largest value
  std::string first_mismatch;  ///< "row r col c: got x, want y"
  std::vector<int64_t> tokens;  ///< the tokens whose rows were compared
  bool ok() const { return mismatched == 0; }
  void merge(const Comparison& other);
};

/// Compares each row r of got holding a token (ids[r] >= 0) with row ids[r] of want. A row count
/// that differs from the ids' counts as one mismatch: rows nobody compared must not pass.
Comparison compare_rows(const Tensor& got, const Tensor& want, std::span<const int64_t> ids, Tolerance tol);

}  // namespace seam::sim
