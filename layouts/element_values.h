// Single elements of a buffer of any DType as doubles: for checks, scalar references and the perf
// binaries' fill patterns.
#pragma once

#include <cstddef>

#include "seam/dtype.h"

namespace seam {

/// Element i of `buffer` (of `dtype`) as a double, for checks and scalar references. Throws
/// ValueError for fp8_e4m3 (its conversions are kernels/quant/fp8.h's).
double element_value(const void* buffer, size_t i, DType dtype);
/// Stores `value` as element i of `buffer`: rounded to nearest even for the floating types,
/// truncated toward zero for int32 (the value must fit), wrapped modulo 256 for uint8. Throws
/// ValueError for fp8_e4m3.
void set_element_value(void* buffer, size_t i, DType dtype, double value);
/// `value` as an element of `dtype` holds it (set_element_value, then element_value).
double as_element(double value, DType dtype);
/// op(a, b) on scalars, as the collectives reduce.
double apply_reduce_op(ReduceOp op, double a, double b);

}  // namespace seam
