// Seam's intra-node shared-memory transport for host buffers.
//
// One POSIX shm segment per host holds, per ordered pair of local ranks, a single-producer /
// single-consumer byte ring (cache-line records: a 32-byte header {tag, size, address, kind} then the payload).
// Small messages are copied in eagerly and the send completes at once; larger ones stream through
// the ring in chunks the receiver copies out while the sender fills the next (pipelined); large
// ones (SEAM_SHM_CMA_BYTES) are read once, straight from the sender's buffer (CMA), when the
// kernel lets local ranks read each other (same user; checked at start-up). Tags are
// matched in order per pair; a message nobody has asked for yet goes to an unexpected queue.
//
// Waiting: each rank has a doorbell word in the segment. A rank with nothing to do marks itself
// asleep and FUTEX_WAITs on its doorbell (with a timeout); whoever publishes data for it, or frees
// ring space it waits for, rings it; so does the shared-memory collectives' rank that finds a
// round complete which a marked peer waits on (Doorbells: any_asleep, wake_if_sleeping; the driver
// marks itself before its last look, mark_asleep). So an oversubscribed host (5 ranks on 2 cores)
// never has ranks burning the cores their peers need.
//
// Dead peers: the local peers' pids are exchanged at start-up and watched through pidfds while
// waiting; a dead peer fails every pending request involving it, naming the rank and pid.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "transports/doorbells.h"
#include "transports/shm/shm_segment.h"
#include "transports/transport.h"

namespace seam::shm {

class ShmTransport : public transport::Transport, public transport::Doorbells {
 public:
  /// Collective over every rank of `exchange` (ranks of all hosts take part in the exchange).
  /// `local_world_ranks`: the world ranks on this host that use shm with each other, this rank
  /// included (its lowest member creates the segment). `ring_bytes`: power of two, per pair (scaled
  /// down for many local ranks). Messages of `cma_threshold` bytes or more (0: none) are copied
  /// once, straight from the sender's buffer (process_vm_readv), when every local rank can.
  static std::unique_ptr<ShmTransport> create(transport::AddressExchange& exchange,
                                              std::vector<int> local_world_ranks, size_t ring_bytes,
                                              std::chrono::milliseconds timeout,
                                              size_t cma_threshold = 256 * 1024);

  /// Whether `world_rank` is reachable through this transport.
  virtual bool is_local(int world_rank) const = 0;
  /// Wakes `world_rank` if it sleeps in wait_for_activity, unconditionally (a rank's own
  /// watcher of another transport's events rings it this way).
  virtual void notify(int world_rank) = 0;
  /// Tells every local rank that this rank aborted (why): their pending requests fail with it,
  /// so they stop at once instead of at their deadline. Idempotent; ignored when the abort came
  /// from another rank.
  virtual void broadcast_abort(const std::string& reason) = 0;
};

}  // namespace seam::shm
