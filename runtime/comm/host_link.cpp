#include "runtime/comm/host_link.h"

#include "runtime/comm/comm_internal.h"

namespace seam::comm::host_link {

const collectives::HostLayout* hosts(Communicator& c) { return CommunicatorAccess::of(c).hosts.get(); }
bool aborted(Communicator& c) { return CommunicatorAccess::of(c).engine->aborted(); }
std::string abort_reason(Communicator& c) { return CommunicatorAccess::of(c).engine->abort_reason(); }
void abort(Communicator& c, const std::string& reason, int peer) {
  CommunicatorAccess::of(c).engine->abort_external(reason, peer);
}
void set_abort_probe(Communicator& c, std::function<std::string()> probe) {
  CommunicatorAccess::of(c).engine->abort_probe = std::move(probe);
}
void poll(Communicator& c) { CommunicatorAccess::of(c).engine->poll(); }

}  // namespace seam::comm::host_link
