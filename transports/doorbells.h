// How ranks of one host that wait on each other's stores to shared memory sleep without missing
// one, and hand their core only to a peer: the shared-memory transport's doorbells. Apart from
// Transport, whose users only move messages; transports without shared memory have none.
#pragma once

#include <span>

namespace seam::transport {

class Doorbells {
 public:
  virtual ~Doorbells() = default;
  /// Marks this rank asleep (true) before the driver's last look at what it waits for, or awake
  /// again (false) when that look found something: a peer that stores to shared memory this
  /// rank watches and then finds the mark wakes it, so the store is seen by the look or ends the
  /// sleep. False, and no mark, where events already wait (the caller polls on instead).
  /// Transport::wait_for_activity clears the mark.
  virtual bool mark_asleep(bool asleep) = 0;
  /// Whether any of `world_ranks` (ranks on this host) is marked asleep, looked at after the
  /// caller's stores to shared memory they watch (a fence orders them before the look).
  virtual bool any_asleep(std::span<const int> world_ranks) = 0;
  /// Wakes those of `world_ranks` marked asleep, after the caller's stores (ordered likewise).
  virtual void wake_if_sleeping(std::span<const int> world_ranks) = 0;
  /// Whether a peer last ran on `cpu`, the CPU this rank runs on now (-1: unknown), which this
  /// records for the peers in turn: the one kind of task a waiting rank hands its core to.
  virtual bool peer_on_cpu(int cpu) = 0;
};

}  // namespace seam::transport
