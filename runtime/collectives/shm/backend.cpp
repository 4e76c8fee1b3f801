#include "runtime/collectives/shm/backend.h"

#include <algorithm>

#include "kernels/reduce/cache_size.h"
#include "runtime/collectives/group.h"
#include "runtime/collectives/shm/region.h"

namespace seam::collectives {

ShmConfig ShmConfig::from(const Config& config) {
  ShmConfig c;
  // Half the core's L2, 256 KiB to 1 MiB: a round stays in the writer's L2 until the peers read
  // it, and the rounds (each a wait for every rank) are as few as that allows.
  c.slot_bytes = config.chunk_bytes ? config.chunk_bytes
                                    : std::clamp(kernels::l2_cache_bytes() / 2, size_t{256} << 10, size_t{1} << 20);
  c.schedule = config.shm_schedule;
  c.single_copy_bytes = config.shm_single_copy_bytes;
  c.helper_threads = config.helper_threads;
  return c;
}

ShmBackend::ShmBackend(transport::Doorbells& doorbells, ShmConfig config)
    : doorbells_(doorbells), config_(std::move(config)) {}

ShmBackend::~ShmBackend() {
  std::lock_guard lock(mutex_);
  // An operation still holding one (its lease) keeps it mapped; the flag keeps it from being used.
  for (auto& [members, region] : regions_) region->dropped = true;
}

std::shared_ptr<ShmRegion> ShmBackend::region_for(const Group& g, bool& made) {
  std::vector<int> members(static_cast<size_t>(g.size()));
  for (int r = 0; r < g.size(); ++r) members[static_cast<size_t>(r)] = g.world_rank(r);
  std::lock_guard lock(mutex_);
  auto& entry = regions_[members];
  made = !entry || entry->dropped;
  if (made) entry = std::make_shared<ShmRegion>(std::move(members), *this);
  return entry;
}

uint64_t ShmBackend::take_turn() {
  std::lock_guard lock(mutex_);
  return issued_++;
}

bool ShmBackend::turn_up(uint64_t turn) {
  std::lock_guard lock(mutex_);
  return serving_ == turn;
}

void ShmBackend::end_turn(uint64_t turn) {
  std::lock_guard lock(mutex_);
  ended_.insert(turn);
  while (ended_.erase(serving_)) ++serving_;
}

}  // namespace seam::collectives
