// Test data and an independent scalar reference for the collectives: every rank's input is a
// formula of (rank, index), so any rank can compute what any other rank sent, and the expected
// result is computed from those values in double.
#pragma once

#include <cstddef>
#include <vector>

#include "seam/dtype.h"

namespace seam::test {

/// Element j of `rank`'s input, as stored in dtype. Integer inputs are small integers in
/// [-8, 8] (their sums over up to five ranks are exact in every dtype); fractional ones lie in
/// (-4, 4), for tolerance checks of the half types.
double input_value(DType dtype, int rank, size_t j, bool fractional = false);
/// count elements of `rank`'s input starting at element `first`.
std::vector<char> make_input(DType dtype, size_t count, int rank, bool fractional = false,
                             size_t first = 0);

/// Index of the first element of `actual` that is not within `tolerance` (absolute, plus
/// relative to |expected|) of `expected`, or -1 when all match.
long first_mismatch(const void* actual, const std::vector<double>& expected, DType dtype,
                    double tolerance = 0.0);

}  // namespace seam::test
