// A shared-memory region for the reductions that run straight out of shared memory: every
// local rank of a group maps one segment holding, per rank, two input slots and two result
// slots (alternating rounds) and a cache line of flags. A round is: each rank copies its
// contribution into its slot, publishes the round number, waits until every peer published it,
// then reads the peers' slots directly.
//
// The communicator's ShmBackend keeps a region per set of members, set up on first use by a
// handshake over the group's own messages. Operations on one region run one at a time per
// process, in issue order (the same order on every rank, as collective calls are).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <utility>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/collectives/group.h"
#include "runtime/collectives/shm/backend.h"
#include "runtime/collectives/shm/tuner.h"
#include "runtime/exec/task.h"
#include "transports/shm/shm_segment.h"

namespace seam::collectives {

/// What a rank publishes with each round, so peers can check they run the same call.
struct CallSignature {
  uint64_t word = 0;  ///< collective, dtype, op and count packed
  bool operator==(const CallSignature&) const = default;
};

class ShmRegion {
 public:
  /// The region whose members have these world ranks, of `backend`'s communicator.
  using Key = std::vector<int>;
  ShmRegion(Key key, const ShmBackend& backend)
      : key_(std::move(key)), doorbells_(backend.doorbells()), config_(backend.config()),
        ranks_(static_cast<int>(key_.size())) {}
  /// The key the backend keeps the region under.
  const Key& key() const { return key_; }
  /// The backend's settings.
  const ShmConfig& config() const { return config_; }
  /// Whether any member is marked asleep, after this rank's stores (Doorbells::any_asleep).
  bool any_asleep() const { return doorbells_.any_asleep(key_); }
  /// Wakes the members marked asleep (Doorbells::wake_if_sleeping).
  void wake_if_sleeping() const { doorbells_.wake_if_sleeping(key_); }
  /// Set once an operation failed on it: the next call sets up a fresh region.
  bool dropped = false;
  /// Gives the region its mapped segment (end of the set-up handshake) as the group's `rank`.
  void attach(std::unique_ptr<shm::SharedSegment> segment, size_t slot_bytes, int rank);
  /// The choice between the slots and single-copy, per call size (see shm/tuner.h).
  ScheduleTuner& tuner() { return tuner_; }
  /// Removes the segment's name once every rank mapped it.
  void unlink() { segment_->unlink(); }
  bool ready() const { return segment_ != nullptr; }
  int ranks() const { return ranks_; }
  size_t slot_bytes() const { return slot_bytes_; }
  /// Rank r's input slot for `round` (rounds alternate between two slots per rank).
  char* slot(int rank, uint64_t round) const {
    return slots_ + (static_cast<size_t>(rank) * 4 + round % 2) * slot_bytes_;
  }
  /// The head of every input slot through which two ranks' small calls move from call to call
  /// (slot_place). attach() maps its pages in: a first touch there would cost a page fault on
  /// each side in the middle of a call.
  static constexpr size_t kPlacedBytes = 128 * 1024;
  /// The bytes of one rank's flags in the segment (its Flags, padded to two cache lines).
  static constexpr size_t kFlagsBytes = 128;
  /// Rank r's result slot for `round`: where the two-phase schedules (all-reduce in shares,
  /// balanced reduce-scatter) leave what the rank folded for its peers.
  char* result(int rank, uint64_t round) const { return slot(rank, round) + 2 * slot_bytes_; }
  /// Publishes that this rank's slot for `round` is filled, with its call's signature and two
  /// words of the schedule's choosing (addresses or shared-memory handles).
  void publish_words(int rank, uint64_t round, CallSignature signature, uint64_t first,
                     uint64_t second);
  /// The buffer address rank r published with `round` for its peers to read (the first word).
  const void* buffer_of(int rank, uint64_t round) const {
    return reinterpret_cast<const void*>(word_of(rank, round, 0));
  }
  /// The address rank r published with `round` for its peers to write into (the second word).
  char* target_of(int rank, uint64_t round) const {
    return reinterpret_cast<char*>(word_of(rank, round, 1));
  }
  /// Word `which` (0 or 1) rank r published with `round`.
  uint64_t word_of(int rank, uint64_t round, int which) const;
  /// Rank r's process id (for single-copy reads and writes, and shared host memory).
  pid_t pid_of(int rank) const;
  /// Rank r's shm::process_token() (shared host memory).
  uint64_t host_token_of(int rank) const;

  /// Records this process's pid for single-copy reads and writes (set-up, before any round).
  void introduce(int rank);
  /// Whether every rank may read and write its peers' memory directly (process_vm_readv and
  /// _writev, which the kernel allows alike; probed with a read at set-up: containers or Yama
  /// may forbid it).
  bool single_copy() const { return single_copy_; }
  /// Whether single-copy is also fast here: rank 0 measured the kernel's copy at set-up
  /// (shm::kernel_copy_speed_ratio), and every rank got its verdict, so all choose alike.
  bool single_copy_preferred() const { return single_copy_preferred_; }
  /// Whether this process may read a known word of rank r's process and write it back.
  bool probe_single_copy(int rank) const;
  /// Whether the local ranks outnumber the cores they may run on (the union of their CPU
  /// affinities, gathered at set-up): waiting ranks then yield their core.
  bool oversubscribed() const { return oversubscribed_; }
  /// Threads of this process that take parts of a large call's copies and folds
  /// (helper_threads.h): SEAM_HELPER_THREADS, or one less than the cores per rank, at most 3.
  int helper_threads() const { return helper_threads_; }
  /// Whether helper_threads() was chosen here, not by SEAM_HELPER_THREADS: only then do the
  /// helpers stand down while the host steals (steal_watch.h).
  bool helpers_automatic() const { return helpers_automatic_; }
  /// Sets the group-wide verdicts (end of set-up): `cores` is how many the ranks may run on.
  void decide(bool single_copy_allowed, bool single_copy_preferred, bool oversubscribed, int cores);
  /// Copies `bytes` at `remote` in rank r's process to `local`. Throws CommError on failure.
  void read_from(int rank, const void* remote, void* local, size_t bytes) const;
  /// Copies `bytes` at `local` to `remote` in rank r's process. Throws CommError on failure.
  void write_to(int rank, void* remote, const void* local, size_t bytes) const;
  /// Whether rank r has published `round` (or a later one).
  bool published(int rank, uint64_t round) const;
  /// Publishes that this rank's result slot for `round` is filled.
  void publish_result(int rank, uint64_t round);
  bool result_published(int rank, uint64_t round) const;
  /// Publishes that this rank's part of `round` failed and that it no longer touches the peers'
  /// memory: its result counts as published, and the peers' wait for results throws.
  void publish_failure(int rank, uint64_t round);
  /// Whether rank r published a failure of `round`.
  bool failed(int rank, uint64_t round) const;
  /// The world ranks of the region's group (whom a publication may have to wake).
  std::span<const int> members() const { return key_; }
  /// The signature rank r published with `round` (valid until this rank publishes the next
  /// round, which its peers' next publication waits for: a peer is at most one round ahead, so
  /// the other parity's entry is the one it overwrites).
  CallSignature signature_of(int rank, uint64_t round) const;

  /// The round the next operation's first will be.
  uint64_t next_round() const { return next_round_; }
  /// Rounds are numbered across operations; each operation takes the next ones.
  uint64_t take_rounds(uint64_t count) {
    uint64_t first = next_round_;
    next_round_ += count;
    return first;
  }
  /// One operation at a time (per process) uses the region.
  bool busy = false;
  /// The round of this process's last operation when it returned without seeing every rank's
  /// publication of it (an eager broadcast), else 0: the next operation first waits for them
  /// (acquire_region), so that no rank is more than one round ahead of a peer, as the slots'
  /// reuse every other round needs.
  uint64_t unconfirmed_round = 0;

 private:
  struct alignas(64) Flags {
    std::atomic<uint64_t> round;  // last round whose slot is filled
    std::atomic<uint64_t> signature[2];  // per round parity
    std::atomic<uint64_t> result_round;  // last round whose result slot is filled
    std::atomic<uint64_t> failed_round;  // last round this rank left on an error (see publish_failure)
    std::atomic<uint64_t> words[2][2];   // per round parity: a schedule's two buffer words
    std::atomic<int64_t> pid;
    std::atomic<uint64_t> probe;  // address of a known word in the process
    std::atomic<uint64_t> host_token;  // shm::process_token()
  };
  static_assert(sizeof(Flags) <= kFlagsBytes);
  Flags* flags(int rank) const { return reinterpret_cast<Flags*>(flags_ + rank * kFlagsBytes); }
  Key key_;
  transport::Doorbells& doorbells_;
  ShmConfig config_;
  std::unique_ptr<shm::SharedSegment> segment_;
  // Where the segment's per-rank flags and its slots begin (set by attach(): every call's
  // publications and copies compute their places from them).
  char* flags_ = nullptr;
  char* slots_ = nullptr;
  int ranks_;
  size_t slot_bytes_ = 0;
  uint64_t next_round_ = 1;
  bool single_copy_ = false;
  bool single_copy_preferred_ = false;
  bool oversubscribed_ = false;
  int helper_threads_ = 0;
  bool helpers_automatic_ = false;
  ScheduleTuner tuner_;
};

/// Whether the group's collectives can run through a shared region: more than one rank, all
/// reached through the shared-memory transport, whose backend the group has.
bool shm_capable(const Group& g);

/// One operation's exclusive use of a region. An operation that ends without finish() (it
/// failed: the ranks' round numbers may now disagree) drops the region, so the next call sets
/// up a fresh one.
class RegionLease {
 public:
  RegionLease() = default;
  RegionLease(const RegionLease&) = delete;
  RegionLease& operator=(const RegionLease&) = delete;
  ~RegionLease();
  ShmRegion* operator->() const { return region_.get(); }
  ShmRegion& operator*() const { return *region_; }
  void finish() { finished_ = true; }
  /// Whether reserve_region took the region and complete_region has yet to run.
  bool reserved_only() const { return reserved_only_; }
  /// The same for an operation whose schedule the tuner chose: hands it the call's time.
  void finish(const ScheduleTuner::Choice& choice) {
    region_->tuner().done(choice);
    finish();
  }

 private:
  friend bool try_acquire_region(const Group& g, RegionLease& lease);
  friend comm::Task reserve_region(Group& g, RegionLease& lease);
  friend comm::Task complete_region(Group& g, RegionLease& lease);
  std::shared_ptr<ShmRegion> region_;
  bool finished_ = false;
  bool reserved_only_ = false;
  bool needs_setup_ = false;
};

/// The fast path of acquire_region: takes the region this thread used last if it is the
/// group's, set up and free. False when the caller must run acquire_region.
bool try_acquire_region(const Group& g, RegionLease& lease);
/// Takes the group's region for one operation, waiting while another operation of this
/// process uses it; sets it up first if this process has none for these members (collective:
/// the handshake runs over the group's messages).
comm::Task acquire_region(Group& g, RegionLease& lease);
/// acquire_region in two halves, for an operation that must take its turn on the region when it
/// is issued but talks to its peers before the region's set-up (shm_broadcast's marker):
/// reserve_region waits only for this process's earlier operations, never for a peer, so calls
/// take the region in issue order on every rank; complete_region then sets the region up
/// (collective, where this process had none) and waits for the peers' last eager round.
comm::Task reserve_region(Group& g, RegionLease& lease);
comm::Task complete_region(Group& g, RegionLease& lease);

/// `co_await take_region(g, lease)`: acquire_region, taken at once without a coroutine frame
/// where try_acquire_region can; `take_region(g, lease, reserve_region)` likewise for reserve_region.
class TakeRegion final : public comm::detail::AwaiterBase<TakeRegion> {
 public:
  using Slow = comm::Task (*)(Group&, RegionLease&);
  TakeRegion(Group& g, RegionLease& lease, Slow slow) : g_(g), lease_(lease), slow_(slow) {}
  bool ready() override {
    if (!slow_started_) {
      if (try_acquire_region(g_, lease_)) return true;
      slow_started_ = true;
      slow_task_ = slow_(g_, lease_);
      sub_.sub = &slow_task_;
    }
    return sub_.ready();
  }
  int blocking_peer() const override { return slow_started_ ? sub_.blocking_peer() : -1; }
  bool waits_on_memory() const override { return slow_started_ && sub_.waits_on_memory(); }
  void await_resume() { sub_.await_resume(); }

 private:
  Group& g_;
  RegionLease& lease_;
  Slow slow_;
  bool slow_started_ = false;
  comm::Task slow_task_;
  comm::detail::SubTaskAwaiter sub_;
};
inline TakeRegion take_region(Group& g, RegionLease& lease, TakeRegion::Slow slow = acquire_region) {
  return TakeRegion(g, lease, slow);
}

/// `co_await peers_published(g, region, round, signature, "all_reduce")`: resumes once every
/// rank published `round`; then throws MismatchError if a peer's call differs.
/// `co_await peers_published_results(g, region, round)`: once every rank's result is there.
struct PublishedAwaiter : comm::detail::AwaiterBase<PublishedAwaiter> {
  const Group* g;
  const ShmRegion* region;
  uint64_t round;
  CallSignature signature;
  std::string_view collective;
  bool results = false;  ///< waits for result slots (no signature check)
  int only = -1;          ///< with a rank of the group: waits for that rank alone
  bool ready() override;
  int blocking_peer() const override;
  bool waits_on_memory() const override { return true; }
  void await_resume();
};
PublishedAwaiter peers_published(const Group& g, const ShmRegion& region, uint64_t round,
                                 CallSignature signature, std::string_view collective);
PublishedAwaiter peers_published_results(const Group& g, const ShmRegion& region, uint64_t round);
/// peers_published for group rank `rank` alone.
PublishedAwaiter rank_published(const Group& g, const ShmRegion& region, int rank, uint64_t round,
                                CallSignature signature, std::string_view collective);

}  // namespace seam::collectives
