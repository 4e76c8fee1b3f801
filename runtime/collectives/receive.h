// Awaiting receives with the size check that detects arguments disagreeing across ranks: a
// message of another size than this rank expects is a MismatchError naming the peer and both
// sizes, not a silent truncation.
#pragma once

#include <cstdint>

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/collectives/group.h"
#include "runtime/collectives/selection.h"
#include "runtime/exec/task.h"

namespace seam::collectives {

/// A posted receive and the byte count this rank expects it to bring.
struct ExpectedReceive {
  transport::RequestPtr request;
  size_t bytes = 0;
};

/// Posts a receive of exactly `bytes` from group rank `peer`.
ExpectedReceive post_receive(Group& g, int peer, uint32_t step, void* data, size_t bytes);

/// Throws MismatchError (size differs) or CommError (the receive failed) for `receive`.
void check_receive(std::string_view collective, const ExpectedReceive& receive);

struct ReceivesAwaiter : comm::detail::AwaiterBase<ReceivesAwaiter> {
  std::string_view collective;
  std::vector<ExpectedReceive> receives;  ///< several receives, or
  ExpectedReceive one;                    ///< one, which takes no allocation
  /// The receives awaited.
  std::span<const ExpectedReceive> all() const {
    return receives.empty() ? std::span<const ExpectedReceive>(&one, one.request ? 1 : 0)
                            : std::span<const ExpectedReceive>(receives);
  }
  bool ready() override;
  int blocking_peer() const override;
  void await_resume();
};

/// `co_await received("all_reduce", {r1, r2})`: resumes once all finished, then checks each.
ReceivesAwaiter received(std::string_view collective, std::vector<ExpectedReceive> receives);
/// `co_await received("broadcast", r)`: one receive. (A braced list inside co_await trips
/// GCC 12's coroutine lowering, hence the overload.)
ReceivesAwaiter received(std::string_view collective, ExpectedReceive receive);

/// Waits for `receive` from group rank `peer`, or until `peer` sent this call a message of
/// `stray_step` that no receive takes: a sign that it took another schedule than this rank.
/// Resumes either way; `stray()` says which.
struct ReceiveOrStrayAwaiter : comm::detail::AwaiterBase<ReceiveOrStrayAwaiter> {
  Group* g;
  int peer;
  const transport::Request* receive;
  uint32_t stray_step;
  bool ready() override { return receive->finished() || g->sent_unreceived(peer, stray_step); }
  int blocking_peer() const override { return receive->finished() ? -1 : g->world_rank(peer); }
  void await_resume() {}
  bool stray() const { return !receive->finished(); }
};
inline ReceiveOrStrayAwaiter received_or_stray(Group& g, int peer, const ExpectedReceive& receive,
                                               uint32_t stray_step) {
  ReceiveOrStrayAwaiter a;
  a.g = &g;
  a.peer = peer;
  a.receive = receive.request.get();
  a.stray_step = stray_step;
  return a;
}

/// `call`, a whole collective of g by algorithm `a`. Where `a` is a schedule in which a rank
/// that finds the ranks' arguments disagree leaves others waiting on messages it will not send
/// (ring, halving, hierarchical) and more than two ranks take part, its MismatchError aborts the
/// communicator, so they get the notice at once, not at their deadline (under direct, and at two
/// ranks, each finds out by itself and the communicator stays usable).
comm::Task aborting_on_mismatch(const Group& g, Algorithm a, comm::Task call);

}  // namespace seam::collectives
