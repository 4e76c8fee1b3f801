// What a layer above reaches of a host communicator's engine beyond its public calls: the device
// communicator, whose failures must abort the host communicator it stages through and whose
// progress thread drives that communicator's engine between calls. Keeps comm_internal.h private.
#pragma once

#include <functional>
#include <string>

#include "seam/communicator.h"

namespace seam::collectives {
struct HostLayout;
}

namespace seam::comm::host_link {

/// Where the communicator's members run when they span hosts (null when they share one).
const collectives::HostLayout* hosts(Communicator& c);
/// Whether the communicator's engine aborted, and why ("" if not).
bool aborted(Communicator& c);
std::string abort_reason(Communicator& c);
/// Aborts the engine for a failure found outside it, naming world rank `peer` (-1: none).
void abort(Communicator& c, const std::string& reason, int peer);
/// Asked by the engine's waiting thread between its looks: a failure that must abort it, or "".
void set_abort_probe(Communicator& c, std::function<std::string()> probe);
/// One non-blocking round of the engine's progress (its peers' abort notices included).
void poll(Communicator& c);

}  // namespace seam::comm::host_link
