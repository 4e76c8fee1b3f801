// SharedHostMemory's handles: which ranges they name, and that mapping one (as a peer would, here
// from this very process) reaches the same bytes; plus the kernel-copy probe's range.
#include <cstdint>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "seam/errors.h"
#include "transports/shm/kernel_copy_speed.h"
#include "transports/shm/shared_host_memory.h"

using seam::SharedHostMemory;
namespace shm = seam::shm;

TEST_CASE("a range inside an allocation has a handle; one outside or past its end has none") {
  auto block = SharedHostMemory::allocate(1 << 20);
  char* base = static_cast<char*>(block->data());
  CHECK(block->size() == (1u << 20));
  CHECK(shm::shared_handle_of(base, 1 << 20) != 0);
  CHECK(shm::shared_handle_of(base + 4096, 8192) != 0);
  CHECK(shm::shared_handle_of(base + (1 << 20) - 8, 16) == 0);  // runs past the end
  std::vector<char> plain(4096);
  CHECK(shm::shared_handle_of(plain.data(), plain.size()) == 0);
  const uint64_t handle = shm::shared_handle_of(base, 1 << 20);
  block.reset();
  CHECK(shm::shared_handle_of(base, 16) == 0);  // freed: no longer registered
  (void)handle;
}

TEST_CASE("mapping a handle reaches the same bytes at the offset it names") {
  auto block = SharedHostMemory::allocate(64 * 1024);
  char* base = static_cast<char*>(block->data());
  std::memset(base, 0, 64 * 1024);
  const uint64_t handle = shm::shared_handle_of(base + 1000, 100);
  REQUIRE(handle != 0);
  char* mapped = static_cast<char*>(shm::map_shared_handle(getpid(), shm::process_token(), handle));
  CHECK(mapped != base + 1000);  // a second mapping, as a peer process gets
  base[1000] = 42;
  CHECK(mapped[0] == 42);
  mapped[99] = 7;
  CHECK(base[1099] == 7);
}

TEST_CASE("a handle of a process that has no such allocation fails with a CommError") {
  auto block = SharedHostMemory::allocate(4096);
  const uint64_t handle = shm::shared_handle_of(block->data(), 16);
  CHECK_THROWS_AS(shm::map_shared_handle(getpid() + 1000000, shm::process_token(), handle),
                  seam::CommError);
  // An earlier process with this pid (another token) has no such block either.
  CHECK_THROWS_AS(shm::map_shared_handle(getpid(), shm::process_token() + 1, handle),
                  seam::CommError);
}

TEST_CASE("a freed block is unmapped when the peer maps a new one") {
  auto first = SharedHostMemory::allocate(5000);
  CHECK(first->size() == 5000);
  const size_t before = shm::mapped_peer_blocks();
  // This process plays the peer: it maps its own blocks by pid, as a peer would.
  shm::map_shared_handle(getpid(), shm::process_token(), shm::shared_handle_of(first->data(), 5000));
  CHECK(shm::mapped_peer_blocks() == before + 1);
  first.reset();
  auto second = SharedHostMemory::allocate(4096);
  shm::map_shared_handle(getpid(), shm::process_token(), shm::shared_handle_of(second->data(), 4096));
  CHECK(shm::mapped_peer_blocks() == before + 1);
}

TEST_CASE("an empty allocation is refused") {
  CHECK_THROWS_AS(SharedHostMemory::allocate(0), seam::ValueError);
}

TEST_CASE("the kernel-copy probe gives a ratio in a sane range") {
  const double ratio = shm::kernel_copy_speed_ratio();
  CHECK(ratio >= 0.0);
  CHECK(ratio < 10.0);
  CHECK(shm::kernel_copy_is_fast() == (ratio >= shm::kFastKernelCopyRatio));
}
