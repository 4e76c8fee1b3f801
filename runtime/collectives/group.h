// What a collective algorithm sees of its communicator: group-local ranks and tagged
// point-to-point messages scoped to one operation (the communicator folds its id and the
// operation's sequence number into the transport tag, so `step` only has to be unique within
// one call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/collectives/host_layout.h"
#include "transports/transport.h"

namespace seam::collectives {

class ShmBackend;

class Group {
 public:
  virtual ~Group() = default;
  /// This process's rank in the group, and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// World rank of group rank r (for messages and errors).
  virtual int world_rank(int r) const = 0;
  /// Non-blocking send/receive to group rank `peer`; `step` (below 128) distinguishes messages
  /// of one call. Messages carry the call's signature (collective, dtype, op), so ranks that
  /// disagree on it never exchange them; steps from 64 are control messages that do not.
  virtual transport::RequestPtr isend(int peer, uint32_t step, const void* data, size_t bytes) = 0;
  virtual transport::RequestPtr irecv(int peer, uint32_t step, void* data, size_t bytes) = 0;
  /// Name of the transport the messages take ("shm": every rank shares this one's host, "ucx",
  /// "shm+ucx": over hosts, some sharing one; "loopback"); selection reads it.
  virtual std::string_view transport_name() const = 0;
  /// The communicator's shared-memory backend (its regions, kept across calls, and settings);
  /// null where the transport reaches no peer through shared memory.
  virtual ShmBackend* shm() const { return nullptr; }
  /// Where the group's ranks run when they span hosts (null when they share one).
  virtual const HostLayout* hosts() const { return nullptr; }
  /// Whether group rank `peer` sent this call a message of `step` that no receive took yet.
  virtual bool sent_unreceived(int /*peer*/, uint32_t /*step*/) { return false; }
  /// Said by a schedule that compares every rank's call (collective, dtype, op, counts) itself
  /// and fails them all alike, leaving the communicator in step: a peer's word that it made
  /// another call is then left to the schedule.
  virtual void compares_arguments() {}
};

}  // namespace seam::collectives
