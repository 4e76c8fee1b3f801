#include "runtime/comm/host_link.h"

#include "runtime/comm/comm_internal.h"

namespace seam::comm::host_link {

const collectives::HostLayout* hosts(Communicator& c) { return c.impl().hosts.get(); }
bool aborted(Communicator& c) { return c.impl().engine->aborted(); }
std::string abort_reason(Communicator& c) { return c.impl().engine->abort_reason(); }
void abort(Communicator& c, const std::string& reason, int peer) {
  c.impl().engine->abort_external(reason, peer);
}
void set_abort_probe(Communicator& c, std::function<std::string()> probe) {
  c.impl().engine->abort_probe = std::move(probe);
}
void poll(Communicator& c) { c.impl().engine->poll(); }

}  // namespace seam::comm::host_link
