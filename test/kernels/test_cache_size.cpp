// The cache figures behind the choice between cached and streaming stores.
#include <doctest/doctest.h>

#include <unistd.h>

#include "kernels/reduce/cache_size.h"

using namespace seam::kernels;

TEST_CASE("cpus_in_list counts the CPUs of a sysfs CPU list") {
  CHECK(cpus_in_list("0") == 1);
  CHECK(cpus_in_list("0-1") == 2);
  CHECK(cpus_in_list("0-3,8,10-11") == 7);
  CHECK(cpus_in_list("") == 0);
  CHECK(cpus_in_list("3-1") == 0);
  CHECK(cpus_in_list("0-x") == 0);
  CHECK(cpus_in_list("0,,2") == 0);
}

TEST_CASE("the last-level cache counted is at most the per-CPU cap for each online CPU") {
  const size_t bytes = last_level_cache_bytes();
  CHECK(bytes > 0);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  REQUIRE(online > 0);
  CHECK(bytes <= static_cast<size_t>(online) * kLastLevelCacheBytesPerCpu);
}
