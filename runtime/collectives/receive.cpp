#include <cstdint>
#include "runtime/collectives/receive.h"

#include <string>

#include "seam/errors.h"

namespace seam::collectives {

ExpectedReceive post_receive(Group& g, int peer, uint32_t step, void* data, size_t bytes) {
  return {g.irecv(peer, step, data, bytes), bytes};
}

void check_receive(std::string_view collective, const ExpectedReceive& receive) {
  const auto& r = *receive.request;
  if (!r.failed() && r.received_bytes() == receive.bytes) return;
  const std::string who = std::string(collective) + ": rank " + std::to_string(r.peer());
  if (r.failed()) {
    // Transports fail a receive shorter than the message with a "size mismatch" error.
    if (r.error().find("size") != std::string::npos)
      throw MismatchError(who + " sent more than expected (" + r.error() +
                          "): the ranks disagree on count or dtype");
    throw CommError(who + ": " + r.error(), r.peer());
  }
  if (r.received_bytes() != receive.bytes)
    throw MismatchError(who + " sent " + std::to_string(r.received_bytes()) + " bytes, expected " +
                        std::to_string(receive.bytes) +
                        ": the ranks disagree on count or dtype");
}

bool ReceivesAwaiter::ready() {
  for (const auto& r : all())
    if (!r.request->finished()) return false;
  return true;
}

int ReceivesAwaiter::blocking_peer() const {
  for (const auto& r : all())
    if (!r.request->finished()) return r.request->peer();
  return -1;
}

void ReceivesAwaiter::await_resume() {
  for (const auto& r : all()) check_receive(collective, r);
}

ReceivesAwaiter received(std::string_view collective, std::vector<ExpectedReceive> receives) {
  ReceivesAwaiter a;
  a.collective = collective;
  a.receives = std::move(receives);
  return a;
}

ReceivesAwaiter received(std::string_view collective, ExpectedReceive receive) {
  ReceivesAwaiter a;
  a.collective = collective;
  a.one = std::move(receive);
  return a;
}

namespace {

comm::Task aborting(comm::Task call) {
  try {
    co_await comm::run(call);
  } catch (const MismatchError& e) {
    throw MismatchError(e.what(), true);
  }
}

}  // namespace

comm::Task aborting_on_mismatch(const Group& g, Algorithm a, comm::Task call) {
  const bool strands = a == Algorithm::ring || a == Algorithm::halving || a == Algorithm::hierarchical;
  return strands && g.size() > 2 ? aborting(std::move(call)) : std::move(call);
}

}  // namespace seam::collectives
