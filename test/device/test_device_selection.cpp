// The device selection table and call signatures, without a GPU: one-shot below each rank count's
// limit and two-shot above, the override, block counts within their bounds, and signatures that
// tell apart every field a mismatched call could differ in.
#include <doctest/doctest.h>

#include <set>

#include "runtime/device/device_comm_impl.h"
#include "runtime/device/select.h"

using namespace seam;
using namespace seam::device;
using kernels::cuda::DeviceAlgo;

TEST_CASE("one-shot for small all-reduces, two-shot for large, the override wins") {
  for (int n : {2, 4, 8}) {
    CAPTURE(n);
    CHECK(select_all_reduce(1024, n, "") == DeviceAlgo::one_shot);
    CHECK(select_all_reduce(size_t{64} << 20, n, "") == DeviceAlgo::two_shot);
    CHECK(select_all_reduce(1024, n, "two_shot") == DeviceAlgo::two_shot);
    CHECK(select_all_reduce(size_t{64} << 20, n, "one_shot") == DeviceAlgo::one_shot);
  }
  // Fewer ranks read less per one-shot call: their limit is at least as high.
  for (size_t bytes = 1024; bytes <= (size_t{8} << 20); bytes *= 2)
    if (select_all_reduce(bytes, 8, "") == DeviceAlgo::one_shot) CHECK(select_all_reduce(bytes, 2, "") == DeviceAlgo::one_shot);
}

TEST_CASE("blocks stay between 1 and the communicator's limit") {
  CHECK(blocks_for(0, 16) == 1);
  CHECK(blocks_for(1, 16) == 1);
  CHECK(blocks_for(size_t{1} << 30, 16) == 16);
  CHECK(blocks_for(size_t{1} << 30, 0) == 1);
  CHECK(blocks_for(size_t{1} << 20, 132) > 1);
}

TEST_CASE("signatures differ in every field") {
  const size_t counts[3] = {5, 0, 7}, other[3] = {5, 7, 0};
  std::set<uint64_t> seen = {
      call_signature(DeviceCall::all_reduce, 0, 0, 0, counts, 1),
      call_signature(DeviceCall::reduce_scatter, 0, 0, 0, counts, 1),
      call_signature(DeviceCall::all_reduce, 2, 0, 0, counts, 1),
      call_signature(DeviceCall::all_reduce, 0, 1, 0, counts, 1),
      call_signature(DeviceCall::broadcast, 0, 0, 1, counts, 1),
      call_signature(DeviceCall::broadcast, 0, 0, 0, counts, 1),
      call_signature(DeviceCall::reduce_scatterv, 0, 0, 0, counts, 3),
      call_signature(DeviceCall::reduce_scatterv, 0, 0, 0, other, 3),
  };
  CHECK(seen.size() == 8);
}
