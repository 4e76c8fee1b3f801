// The shared-memory backend of one communicator: its settings (read once), the doorbells of the
// host's transport, the regions its calls run through (one per set of members: the communicator
// and the views of its two-level calls), and the turns that keep two-level calls' shared-memory
// phases in issue order. The communicator owns it; its regions go with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "layouts/config.h"
#include "transports/doorbells.h"

namespace seam::collectives {

class Group;
class ShmRegion;

/// The shared-memory backend's settings, from the process's Config.
struct ShmConfig {
  /// Bytes of one slot: SEAM_CHUNK_BYTES, or half the L2 (256 KiB to 1 MiB). Rank 0's holds for
  /// a region.
  size_t slot_bytes = 0;
  /// SEAM_SHM_SCHEDULE: one schedule for every call on plain buffers; "" = tuned.
  std::string schedule;
  /// SEAM_SHM_SINGLE_COPY_BYTES: single-copy from this size; 0 = never, -1 = automatic.
  int64_t single_copy_bytes = -1;
  /// SEAM_HELPER_THREADS: helper threads a process for large calls; -1 = automatic.
  int helper_threads = -1;
  static ShmConfig from(const Config& config);
};

class ShmBackend {
 public:
  /// `doorbells`: the host transport's (how a publication wakes a peer that sleeps on it).
  ShmBackend(transport::Doorbells& doorbells, ShmConfig config);
  /// Drops the regions: their mappings go once no operation holds them.
  ~ShmBackend();
  ShmBackend(const ShmBackend&) = delete;
  ShmBackend& operator=(const ShmBackend&) = delete;

  const ShmConfig& config() const { return config_; }
  transport::Doorbells& doorbells() const { return doorbells_; }

  /// The region of the group's members, made (not yet set up) where there was none or the one
  /// there was dropped (an operation failed on it): `made` says so.
  std::shared_ptr<ShmRegion> region_for(const Group& g, bool& made);
  /// The region this communicator's last operation used: try_acquire_region's fast path.
  std::shared_ptr<ShmRegion> last;

  /// The next turn of the communicator's two-level calls (taken at the call's start: in issue
  /// order); whether `turn` is being served; its end, finished or not.
  uint64_t take_turn();
  bool turn_up(uint64_t turn);
  void end_turn(uint64_t turn);

 private:
  transport::Doorbells& doorbells_;
  const ShmConfig config_;
  std::mutex mutex_;
  std::map<std::vector<int>, std::shared_ptr<ShmRegion>> regions_;
  uint64_t issued_ = 0, serving_ = 0;
  std::set<uint64_t> ended_;  // turns that ended before every earlier one did
};

}  // namespace seam::collectives
