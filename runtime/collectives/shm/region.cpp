#include <cstdint>
#include "runtime/collectives/shm/region.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "kernels/reduce/cache_size.h"
#include "seam/errors.h"
#include "layouts/log.h"
#include "runtime/collectives/receive.h"
#include "transports/shm/kernel_copy_speed.h"
#include "transports/shm/process_memory.h"
#include "transports/shm/shared_host_memory.h"

namespace seam::collectives {
namespace {

constexpr size_t kFlagsBytes = ShmRegion::kFlagsBytes;
// What a peer reads from this process, and writes back unchanged, to find out whether it may
// (probe_single_copy). This process never reads it.
constexpr uint64_t kProbeValue = 0x5ea3c0117ec71e5ull;
uint64_t probe_word = kProbeValue;
// Messages of the set-up handshake use steps no schedule reaches.
// A control step (from 64): the set-up does not depend on the call's signature.
constexpr uint32_t kSetupStep = 0x70;
constexpr size_t kNameBytes = 128;

bool same_members(const Group& g, const ShmRegion::Key& members) {
  if (static_cast<size_t>(g.size()) != members.size()) return false;
  for (int r = 0; r < g.size(); ++r)
    if (g.world_rank(r) != members[static_cast<size_t>(r)]) return false;
  return true;
}

// The tuner's decisions, the tuner's start times (two per rank), then per rank: flags, two
// input slots and two result slots.
static_assert(ScheduleTuner::kTableBytes <= kFlagsBytes);

size_t header_blocks(int ranks) {
  return 1 + (16 * static_cast<size_t>(ranks) + kFlagsBytes - 1) / kFlagsBytes;
}

size_t region_bytes(int ranks, size_t slot_bytes) {
  return (header_blocks(ranks) + ranks) * kFlagsBytes + 4 * static_cast<size_t>(ranks) * slot_bytes;
}

/// Verdict bits rank 0 sends at the end of the set-up.
constexpr char kSingleCopyAllowed = 1, kSingleCopyPreferred = 2, kOversubscribed = 4;

/// Rank 0's verdicts for the group: the flags above and the cores the ranks may run on.
struct Verdict {
  char flags = 0;
  char unused = 0;  // no uninitialised byte goes out
  uint16_t cores = 0;
};

/// What a rank tells rank 0 when it has mapped the segment.
struct Acknowledgement {
  cpu_set_t affinity;  // the CPUs this rank may run on
  char single_copy;    // whether it may read rank 0's memory
};

cpu_set_t own_affinity() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) CPU_ZERO(&set);
  return set;
}

/// Rank 0 creates the segment and sends its name; the others map it and acknowledge, with
/// their CPU affinity and whether they may read rank 0's memory; rank 0 unlinks the name once
/// all have it, so nothing is left behind if a rank dies later, and sends every rank the
/// verdicts: single-copy allowed, preferred, and whether the ranks outnumber their cores.
/// (A rank bound to one core sees one CPU: only the union of all ranks' affinities says
/// whether they share cores.)
comm::Task set_up(Group& g, ShmRegion& region) {
  const int n = g.size();
  // Rank 0's slot size holds for all (caches may differ between cores).
  struct Announcement {
    char name[kNameBytes];
    uint64_t slot_bytes;
  } announced{};
  Verdict verdict;
  std::vector<Acknowledgement> acks_received(n);
  if (g.rank() == 0) {
    announced.slot_bytes = region.config().slot_bytes;
    auto segment = shm::SharedSegment::create(shm::unique_segment_name("coll"),
                                              region_bytes(n, announced.slot_bytes));
    std::strncpy(announced.name, segment->name().c_str(), kNameBytes - 1);
    region.attach(std::move(segment), announced.slot_bytes, 0);
    region.introduce(0);
    std::vector<transport::RequestPtr> sends;
    std::vector<ExpectedReceive> acks;
    for (int p = 1; p < n; ++p) {
      sends.push_back(g.isend(p, kSetupStep, &announced, sizeof announced));
      acks.push_back(post_receive(g, p, kSetupStep, &acks_received[p], sizeof(Acknowledgement)));
    }
    co_await comm::all_of(std::move(sends));
    co_await received("shared-memory set-up", std::move(acks));
    region.unlink();
    // Rank 1 introduced itself before acknowledging.
    bool allowed = region.probe_single_copy(1);
    cpu_set_t cores = own_affinity();
    for (int p = 1; p < n; ++p) {
      allowed = allowed && acks_received[p].single_copy != 0;
      CPU_OR(&cores, &cores, &acks_received[p].affinity);
    }
    const bool fast = allowed && shm::kernel_copy_is_fast();
    verdict.flags = static_cast<char>((allowed ? kSingleCopyAllowed : 0) |
                                      (fast ? kSingleCopyPreferred : 0) |
                                      (n > CPU_COUNT(&cores) ? kOversubscribed : 0));
    verdict.cores = static_cast<uint16_t>(CPU_COUNT(&cores));
    SEAM_LOG_DEBUG("shared-memory set-up: the kernel's cross-process copy runs at {:.2f}x memcpy ({})",
                   shm::kernel_copy_speed_ratio(), fast ? "fast" : "slow");
    std::vector<transport::RequestPtr> verdicts;
    for (int p = 1; p < n; ++p) verdicts.push_back(g.isend(p, kSetupStep, &verdict, sizeof verdict));
    co_await comm::all_of(std::move(verdicts));
  } else {
    co_await received("shared-memory set-up",
                      post_receive(g, 0, kSetupStep, &announced, sizeof announced));
    region.attach(shm::SharedSegment::open(announced.name, region_bytes(n, announced.slot_bytes)),
                  announced.slot_bytes, g.rank());
    region.introduce(g.rank());
    Acknowledgement ack{own_affinity(), static_cast<char>(region.probe_single_copy(0) ? 1 : 0)};
    std::vector<transport::RequestPtr> send{g.isend(0, kSetupStep, &ack, sizeof ack)};
    co_await comm::all_of(std::move(send));
    co_await received("shared-memory set-up",
                      post_receive(g, 0, kSetupStep, &verdict, sizeof verdict));
  }
  region.decide(verdict.flags & kSingleCopyAllowed, verdict.flags & kSingleCopyPreferred,
                verdict.flags & kOversubscribed, verdict.cores);
  SEAM_LOG_DEBUG("shared-memory region for {} ranks: {} KiB slots, single-copy reads {}, {}", n,
                 region.slot_bytes() / 1024,
                 region.single_copy_preferred() ? "allowed and preferred"
                 : region.single_copy()         ? "allowed, not preferred"
                                                : "not allowed",
                 region.oversubscribed() ? "more ranks than cores (waits yield)" : "a core each");
  if (region.helper_threads() > 0)
    SEAM_LOG_DEBUG("shared-memory region for {} ranks on {} cores: {} helper thread(s) a rank for "
                   "large calls", n, verdict.cores, region.helper_threads());
}

}  // namespace

void ShmRegion::attach(std::unique_ptr<shm::SharedSegment> segment, size_t slot_bytes, int rank) {
  segment_ = std::move(segment);
  slot_bytes_ = slot_bytes;
  static_assert(sizeof(std::atomic<uint8_t>) == 1 && std::atomic<uint8_t>::is_always_lock_free);
  static_assert(std::atomic<int64_t>::is_always_lock_free);
  char* base = static_cast<char*>(segment_->data());
  flags_ = base + header_blocks(ranks_) * kFlagsBytes;
  slots_ = flags_ + ranks_ * kFlagsBytes;
  tuner_.attach(reinterpret_cast<std::atomic<uint8_t>*>(base),
                reinterpret_cast<std::atomic<int64_t>*>(base + kFlagsBytes), ranks_, rank);
  if (ranks_ != 2) return;  // only two ranks' calls move through the slots' heads
  for (int r = 0; r < ranks_; ++r)
    for (uint64_t parity = 0; parity < 2; ++parity)
      shm::map_in(slot(r, parity), std::min(kPlacedBytes, slot_bytes_));
}

void ShmRegion::publish_words(int rank, uint64_t round, CallSignature signature, uint64_t first,
                              uint64_t second) {
  flags(rank)->signature[round % 2].store(signature.word, std::memory_order_relaxed);
  flags(rank)->words[round % 2][0].store(first, std::memory_order_relaxed);
  flags(rank)->words[round % 2][1].store(second, std::memory_order_relaxed);
  flags(rank)->round.store(round, std::memory_order_release);
}

bool ShmRegion::published(int rank, uint64_t round) const {
  return flags(rank)->round.load(std::memory_order_acquire) >= round;
}

void ShmRegion::publish_result(int rank, uint64_t round) {
  flags(rank)->result_round.store(round, std::memory_order_release);
}

void ShmRegion::publish_failure(int rank, uint64_t round) {
  flags(rank)->failed_round.store(round, std::memory_order_relaxed);
  flags(rank)->result_round.store(round, std::memory_order_release);
}

bool ShmRegion::failed(int rank, uint64_t round) const {
  return flags(rank)->failed_round.load(std::memory_order_relaxed) >= round;
}

bool ShmRegion::result_published(int rank, uint64_t round) const {
  return flags(rank)->result_round.load(std::memory_order_acquire) >= round;
}

uint64_t ShmRegion::word_of(int rank, uint64_t round, int which) const {
  return flags(rank)->words[round % 2][which].load(std::memory_order_relaxed);
}

pid_t ShmRegion::pid_of(int rank) const {
  return static_cast<pid_t>(flags(rank)->pid.load(std::memory_order_relaxed));
}

uint64_t ShmRegion::host_token_of(int rank) const {
  return flags(rank)->host_token.load(std::memory_order_relaxed);
}

void ShmRegion::introduce(int rank) {
  flags(rank)->pid.store(getpid(), std::memory_order_relaxed);
  flags(rank)->host_token.store(shm::process_token(), std::memory_order_relaxed);
  flags(rank)->probe.store(reinterpret_cast<uint64_t>(&probe_word), std::memory_order_release);
}

void ShmRegion::decide(bool single_copy_allowed, bool single_copy_preferred, bool oversubscribed,
                       int cores) {
  single_copy_ = single_copy_allowed;
  single_copy_preferred_ = single_copy_allowed && single_copy_preferred;
  oversubscribed_ = oversubscribed;
  // A second thread a rank wherever there is a second core a rank; more pay less (the memory
  // system's bandwidth, not the cores', is what the second one reaches for).
  constexpr int kAutomaticMost = 3;
  const int configured = config_.helper_threads;
  helpers_automatic_ = configured < 0;
  helper_threads_ = configured >= 0 ? configured
                                    : std::clamp(cores / ranks() - 1, 0, kAutomaticMost);
}

bool ShmRegion::probe_single_copy(int rank) const {
  uint64_t word = 0;
  auto* remote = reinterpret_cast<void*>(flags(rank)->probe.load(std::memory_order_acquire));
  // A seccomp profile may allow process_vm_readv and not _writev: the schedules need both.
  return shm::read_process_memory(pid_of(rank), remote, &word, sizeof word) == 0 &&
         word == kProbeValue &&
         shm::write_process_memory(pid_of(rank), remote, &word, sizeof word) == 0;
}

void ShmRegion::read_from(int rank, const void* remote, void* local, size_t bytes) const {
  const pid_t pid = pid_of(rank);
  if (const int err = shm::read_process_memory(pid, remote, local, bytes))
    throw CommError("shared-memory single-copy read from rank " + std::to_string(members()[static_cast<size_t>(rank)]) +
                        " (pid " + std::to_string(pid) + ") failed: " + std::strerror(err),
                    members()[static_cast<size_t>(rank)]);
}

void ShmRegion::write_to(int rank, void* remote, const void* local, size_t bytes) const {
  const pid_t pid = pid_of(rank);
  if (const int err = shm::write_process_memory(pid, remote, local, bytes))
    throw CommError("shared-memory single-copy write to rank " + std::to_string(members()[static_cast<size_t>(rank)]) +
                        " (pid " + std::to_string(pid) + ") failed: " + std::strerror(err),
                    members()[static_cast<size_t>(rank)]);
}

CallSignature ShmRegion::signature_of(int rank, uint64_t round) const {
  return {flags(rank)->signature[round % 2].load(std::memory_order_relaxed)};
}

bool shm_capable(const Group& g) { return g.size() > 1 && g.transport_name() == "shm" && g.shm(); }

/// Whether every rank published `round` with this rank's call of it (the deferred wait of
/// acquire_region, when it need not wait).
bool confirmed_at_once(const Group& g, const ShmRegion& region, uint64_t round) {
  const CallSignature mine = region.signature_of(g.rank(), round);
  for (int p = 0; p < region.ranks(); ++p)
    if (!region.published(p, round) || !(region.signature_of(p, round) == mine)) return false;
  return true;
}

bool try_acquire_region(const Group& g, RegionLease& lease) {
  const auto& region = g.shm()->last;
  if (!region || region->dropped || region->busy || !region->ready() || !same_members(g, region->key()))
    return false;
  if (region->unconfirmed_round) {
    if (!confirmed_at_once(g, *region, region->unconfirmed_round)) return false;
    region->unconfirmed_round = 0;
  }
  region->busy = true;
  lease.region_ = region;
  return true;
}

comm::Task acquire_region(Group& g, RegionLease& lease) {
  comm::Task reserve = reserve_region(g, lease);
  co_await comm::run(reserve);
  comm::Task complete = complete_region(g, lease);
  co_await comm::run(complete);
}

comm::Task reserve_region(Group& g, RegionLease& lease) {
  for (;;) {
    bool first = false;
    lease.region_ = g.shm()->region_for(g, first);
    ShmRegion* region = lease.region_.get();
    if (!first) {
      // An earlier operation's failed set-up drops the region it waited for: start again.
      co_await comm::until([region] { return region->dropped || (region->ready() && !region->busy); });
      if (region->dropped) {
        lease.region_.reset();
        continue;
      }
    }
    region->busy = true;
    lease.needs_setup_ = first;
    lease.reserved_only_ = true;
    co_return;
  }
}

comm::Task complete_region(Group& g, RegionLease& lease) {
  ShmRegion* region = lease.region_.get();
  if (lease.needs_setup_) {
    comm::Task setup = set_up(g, *region);
    co_await comm::run(setup);
    lease.needs_setup_ = false;
  }
  if (const uint64_t round = region->unconfirmed_round) {
    // Every rank's publication of this process's last round, checked against its own call.
    co_await peers_published(g, *region, round, region->signature_of(g.rank(), round), "broadcast");
    region->unconfirmed_round = 0;
  }
  lease.reserved_only_ = false;
  g.shm()->last = lease.region_;
}

RegionLease::~RegionLease() {
  if (!region_) return;
  region_->busy = false;
  if (finished_) return;
  region_->dropped = true;  // the backend makes a fresh one for the next call
}

bool PublishedAwaiter::ready() {
  if (blocking_peer() == -1) return true;
  // More local ranks than cores: the rank being waited for may need this core. Open MPI
  // yields in its polling loop in the same situation.
  if (region->oversubscribed()) sched_yield();
  return false;
}

int PublishedAwaiter::blocking_peer() const {
  if (only >= 0) return region->published(only, round) ? -1 : g->world_rank(only);
  for (int p = 0; p < region->ranks(); ++p)
    if (results ? !region->result_published(p, round) : !region->published(p, round))
      return g->world_rank(p);
  return -1;
}

void PublishedAwaiter::await_resume() {
  if (results) {
    // result_round's acquire load (blocking_peer) ordered failed_round's store before it.
    for (int p = 0; p < region->ranks(); ++p)
      if (p != g->rank() && region->failed(p, round))
        throw CommError("seam shm: rank " + std::to_string(g->world_rank(p)) +
                            " failed in the middle of the call: this rank's result is incomplete",
                        g->world_rank(p));
    return;
  }
  for (int p = 0; p < region->ranks(); ++p)
    if ((only < 0 || p == only) && !(region->signature_of(p, round) == signature))
      throw MismatchError(std::string(collective) + ": rank " + std::to_string(g->world_rank(p)) +
                          " called with other arguments (count or blocks, dtype, op, buffers in "
                          "SharedHostMemory on some ranks only, or other SEAM_SHM_SCHEDULE or "
                          "SEAM_HELPER_THREADS settings) than rank " +
                          std::to_string(g->world_rank(g->rank())));
}

PublishedAwaiter peers_published(const Group& g, const ShmRegion& region, uint64_t round,
                                 CallSignature signature, std::string_view collective) {
  PublishedAwaiter a;
  a.g = &g;
  a.region = &region;
  a.round = round;
  a.signature = signature;
  a.collective = collective;
  return a;
}

PublishedAwaiter peers_published_results(const Group& g, const ShmRegion& region, uint64_t round) {
  PublishedAwaiter a = peers_published(g, region, round, {}, "");
  a.results = true;
  return a;
}

PublishedAwaiter rank_published(const Group& g, const ShmRegion& region, int rank, uint64_t round,
                                CallSignature signature, std::string_view collective) {
  PublishedAwaiter a = peers_published(g, region, round, signature, collective);
  a.only = rank;
  return a;
}

}  // namespace seam::collectives
