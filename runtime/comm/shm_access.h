// For shared-memory collectives (runtime/collectives): the shm transport beneath a running
// operation's group, to map a segment shared by the group's local ranks (ShmTransport::map_shared)
// and to wake a rank sleeping in its wait (ShmTransport::notify) after publishing a flag.
#pragma once

#include "runtime/collectives/group.h"
#include "transports/shm/shm_transport.h"

namespace seam::comm {

/// The shm transport carrying this group's messages to its local peers, or nullptr when there is
/// none (UCX forced, a loopback group in unit tests). Valid while the operation runs.
shm::ShmTransport* shm_transport_of(collectives::Group& group);

}  // namespace seam::comm
