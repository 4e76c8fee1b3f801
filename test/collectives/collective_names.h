// The collectives' names, in the order every check's `enum class Kind` lists them (scatterv last:
// the device checks, which have none, stop before it).
#pragma once

namespace seam::test {

inline constexpr const char* kCollectiveNames[] = {"all_reduce", "reduce_scatter", "reduce_scatterv", "all_gather",
                                                   "all_gatherv", "broadcast",     "scatterv"};

/// The name of a check's Kind value.
template <class Kind>
const char* kind_name(Kind k) {
  return kCollectiveNames[static_cast<int>(k)];
}

}  // namespace seam::test
