// Element types: names, sizes, and the scalar view of one element (element_value and
// set_element_value round-trip through the dtype; fp8 has none here).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "layouts/element_values.h"
#include "seam/dtype.h"
#include "seam/errors.h"

namespace seam::test {

TEST_CASE("names parse back to their dtype and sizes match") {
  for (DType t :
       {DType::f32, DType::f64, DType::bf16, DType::f16, DType::i32, DType::u8, DType::fp8_e4m3})
    CHECK(parse_dtype(dtype_name(t)) == t);
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::f64) == 8);
  CHECK_FALSE(parse_dtype("float8"));
}

TEST_CASE("an element stored through its dtype reads back rounded to it") {
  std::vector<uint8_t> buffer(4 * 8);
  set_element_value(buffer.data(), 3, DType::f32, 1.25);
  CHECK(element_value(buffer.data(), 3, DType::f32) == 1.25);
  set_element_value(buffer.data(), 1, DType::f64, 0.1);
  CHECK(element_value(buffer.data(), 1, DType::f64) == 0.1);
  set_element_value(buffer.data(), 2, DType::i32, -7);
  CHECK(element_value(buffer.data(), 2, DType::i32) == -7);
  // bf16 keeps 7 mantissa bits: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7, and a tie goes
  // to the even neighbour: down to 1 here, up to 1 + 2^-6 from 1 + 3 * 2^-8.
  set_element_value(buffer.data(), 5, DType::bf16, 1.0 + 0x1p-8);
  CHECK(element_value(buffer.data(), 5, DType::bf16) == 1.0);
  set_element_value(buffer.data(), 5, DType::bf16, 1.0 + 3 * 0x1p-8);
  CHECK(element_value(buffer.data(), 5, DType::bf16) == 1.0 + 0x1p-6);
  set_element_value(buffer.data(), 6, DType::f16, 0.1);
  CHECK(element_value(buffer.data(), 6, DType::f16) == doctest::Approx(0.1).epsilon(1e-3));
  set_element_value(buffer.data(), 7, DType::u8, 200);
  CHECK(element_value(buffer.data(), 7, DType::u8) == 200);
  CHECK(as_element(-8, DType::u8) == 248);     // wrapped modulo 256
  CHECK(as_element(-2.75, DType::i32) == -2);  // truncated toward zero
  CHECK(as_element(1.0 + 0x1p-8, DType::bf16) == 1.0);
}

TEST_CASE("fp8 elements have no scalar view here") {
  uint8_t byte = 0;
  CHECK_THROWS_AS(element_value(&byte, 0, DType::fp8_e4m3), ValueError);
  CHECK_THROWS_WITH_AS(set_element_value(&byte, 0, DType::fp8_e4m3, 1.0),
                       "seam: fp8_e4m3 elements have no scalar view here", ValueError);
}

TEST_CASE("reduce ops on scalars") {
  CHECK(apply_reduce_op(ReduceOp::sum, 2, -3) == -1);
  CHECK(apply_reduce_op(ReduceOp::max, 2, -3) == 2);
  CHECK(apply_reduce_op(ReduceOp::min, 2, -3) == -3);
}

}  // namespace seam::test
