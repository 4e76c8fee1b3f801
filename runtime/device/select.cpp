#include "runtime/device/select.h"

#include <algorithm>

namespace seam::device {

using kernels::cuda::DeviceAlgo;

namespace {

// Largest all-reduce (bytes) that runs one-shot, by ranks: past it the n-fold read of one-shot
// costs more than two-shot's extra meeting.
struct OneShotLimit {
  int max_ranks;
  size_t bytes;
};
constexpr OneShotLimit kOneShotLimits[] = {
    {2, size_t{512} << 10},
    {4, size_t{256} << 10},
    {8, size_t{128} << 10},
};

}  // namespace

DeviceAlgo select_all_reduce(size_t bytes, int ranks, const std::string& override_name) {
  if (override_name == "one_shot") return DeviceAlgo::one_shot;
  if (override_name == "two_shot") return DeviceAlgo::two_shot;
  for (const auto& l : kOneShotLimits)
    if (ranks <= l.max_ranks) return bytes <= l.bytes ? DeviceAlgo::one_shot : DeviceAlgo::two_shot;
  return DeviceAlgo::two_shot;
}

int blocks_for(size_t bytes, int max_blocks) {
  constexpr size_t kBytesPerBlock = size_t{64} << 10;
  const size_t want = (bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  return static_cast<int>(std::clamp<size_t>(want, 1, static_cast<size_t>(std::max(1, max_blocks))));
}

const char* algo_name(DeviceAlgo a) { return a == DeviceAlgo::one_shot ? "one_shot" : "two_shot"; }

}  // namespace seam::device
