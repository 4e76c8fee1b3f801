// Test data and an independent scalar reference for the collectives: element access through
// double, integer-valued inputs (exact in every dtype for the sums of up to five ranks), and
// the expected reduction computed in double.
#pragma once

#include <cstddef>
#include <vector>

#include "layouts/dtype.h"

namespace seam::test {

/// Reads element i of a buffer of dtype as double.
double get_element(const void* buffer, size_t i, DType dtype);
/// Writes element i (rounded to the dtype).
void set_element(void* buffer, size_t i, DType dtype, double value);

/// count elements for `rank`: small integers in [-8, 8], different per rank, index and salt.
std::vector<char> integer_input(DType dtype, size_t count, int rank, int salt = 0);
/// count elements for `rank`: non-integer values in (-4, 4), for tolerance checks.
std::vector<char> fractional_input(DType dtype, size_t count, int rank);

/// op over the ranks' element i, in double.
double reduce_reference(const std::vector<std::vector<char>>& inputs, size_t i, DType dtype,
                        ReduceOp op);

/// Index of the first element of `actual` that is not within `tolerance` (absolute, plus
/// relative to |expected|) of `expected`, or -1 when all match.
long first_mismatch(const void* actual, const std::vector<double>& expected, DType dtype,
                    double tolerance = 0.0);

}  // namespace seam::test
