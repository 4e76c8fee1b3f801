#include <cstdint>
#include "transports/shm/shared_host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "seam/errors.h"
#include "layouts/sha256.h"
#include "transports/shm/shm_segment.h"

namespace seam {
namespace {

// A handle is (allocation number + 1) << kOffsetBits | offset.
constexpr int kOffsetBits = 40;
constexpr uint64_t kOffsetMask = (uint64_t{1} << kOffsetBits) - 1;

// Every allocation ends with a cache line whose first word the owner sets when it frees the
// block; a peer that mapped it unmaps it when it next maps a new block, and the memory is
// released then.
constexpr size_t kTrailerBytes = 64;

size_t padded(size_t bytes) { return (bytes + kTrailerBytes - 1) / kTrailerBytes * kTrailerBytes; }

std::atomic<uint32_t>& freed_flag(const shm::SharedSegment& segment) {
  static_assert(std::atomic<uint32_t>::is_always_lock_free);
  return *reinterpret_cast<std::atomic<uint32_t>*>(static_cast<char*>(segment.data()) +
                                                   segment.size() - kTrailerBytes);
}

// The name's middle is a keyed hash of the block's number under the owner's secret token, which
// only the job's ranks learn: another user can neither predict the next name (and take it
// first) nor tell it from a random one; the pid keeps blocks of dead owners findable.
std::string block_name(pid_t pid, uint64_t token, uint64_t id) {
  const std::string key(reinterpret_cast<const char*>(&token), sizeof token);
  const auto digest = hmac_sha256(key, "seam-host-block-" + std::to_string(id));
  uint64_t name_bits = 0;
  std::memcpy(&name_bits, digest.data(), sizeof name_bits);
  return shm::segment_name(pid, name_bits, "host");
}

/// This process's live allocations (base address → number, size) and the peers' allocations
/// it has mapped ((pid, number) → mapping).
struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, std::pair<uint64_t, size_t>> own;
  std::map<std::tuple<pid_t, uint64_t, uint64_t>, std::unique_ptr<shm::SharedSegment>> peers;
  std::atomic<uint64_t> next_id{0};
  // How many `own` holds: every collective call asks, most processes have none.
  std::atomic<size_t> live{0};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::unique_ptr<SharedHostMemory> SharedHostMemory::allocate(size_t bytes) {
  if (bytes == 0) throw ValueError("SharedHostMemory::allocate: size must be positive");
  if (bytes > kOffsetMask) throw ValueError("SharedHostMemory::allocate: at most 1 TiB per block");
  const uint64_t id = registry().next_id++;
  const std::string name = block_name(getpid(), shm::process_token(), id);
  auto segment = shm::SharedSegment::create(name, padded(bytes) + kTrailerBytes);
  std::lock_guard lock(registry().mutex);
  registry().own[reinterpret_cast<uintptr_t>(segment->data())] = {id, bytes};
  registry().live.fetch_add(1, std::memory_order_relaxed);
  return std::unique_ptr<SharedHostMemory>(new SharedHostMemory(std::move(segment), bytes));
}

SharedHostMemory::SharedHostMemory(std::unique_ptr<shm::SharedSegment> segment, size_t bytes)
    : segment_(std::move(segment)), bytes_(bytes) {}

SharedHostMemory::~SharedHostMemory() {
  freed_flag(*segment_).store(1, std::memory_order_release);
  std::lock_guard lock(registry().mutex);
  registry().own.erase(reinterpret_cast<uintptr_t>(segment_->data()));
  registry().live.fetch_sub(1, std::memory_order_relaxed);
}

void* SharedHostMemory::data() const { return segment_->data(); }
size_t SharedHostMemory::size() const { return bytes_; }

namespace shm {

uint64_t shared_handle_of(const void* data, size_t bytes) {
  if (registry().live.load(std::memory_order_relaxed) == 0) return 0;
  const auto address = reinterpret_cast<uintptr_t>(data);
  std::lock_guard lock(registry().mutex);
  auto it = registry().own.upper_bound(address);
  if (it == registry().own.begin()) return 0;
  --it;
  const auto [id, size] = it->second;
  const uintptr_t offset = address - it->first;
  if (offset + bytes > size) return 0;
  return (id + 1) << kOffsetBits | offset;
}

uint64_t process_token() {
  static const uint64_t token = random_token();
  return token;
}

void* map_shared_handle(pid_t pid, uint64_t token, uint64_t handle) {
  const uint64_t id = (handle >> kOffsetBits) - 1;
  std::lock_guard lock(registry().mutex);
  auto it = registry().peers.find({pid, token, id});
  if (it == registry().peers.end()) {
    // A new block (often the replacement of a freed one): first unmap the blocks their owners
    // freed, which no collective uses any more (a call's buffers outlive it). Only here, so
    // that calls on blocks already mapped read no flags.
    std::erase_if(registry().peers, [](const auto& entry) {
      return freed_flag(*entry.second).load(std::memory_order_acquire) != 0;
    });
    it = registry()
             .peers.emplace(std::tuple{pid, token, id}, SharedSegment::open(block_name(pid, token, id), 0))
             .first;
  }
  return static_cast<char*>(it->second->data()) + (handle & kOffsetMask);
}

size_t mapped_peer_blocks() {
  std::lock_guard lock(registry().mutex);
  return registry().peers.size();
}

}  // namespace shm
}  // namespace seam
