// -P 1: every rank's threads moved onto one CPU after the set-up, as a scheduler may put ranks
// that are not pinned. The set-up saw a core per rank, so what the rows then time is how the
// waits hand over a core they share with the peer they wait for.
#pragma once

namespace seam::comm {
class Communicator;
}

namespace seam::perf {

/// After a collective that sets up the communicator's shared-memory region, moves every thread
/// of this process onto the lowest CPU it may run on (the same CPU on every rank where the
/// ranks may run on the same CPUs); returns that CPU, or -1 where it could not.
int pile_up_on_one_cpu(comm::Communicator& comm);

}  // namespace seam::perf
