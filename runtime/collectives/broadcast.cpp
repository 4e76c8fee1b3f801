#include <string>

#include "seam/errors.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/chunks.h"
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/validate.h"

namespace seam::collectives {
namespace {

constexpr std::string_view kName = "broadcast";

/// The root sends the whole buffer to every rank. With `watch_marker`, a rank that waits for it
/// fails at once where the root sent the marker of shm_broadcast's gather instead.
comm::Task direct_broadcast(Group& g, char* buffer, size_t bytes, int root, bool watch_marker) {
  if (g.rank() != root) {
    const ExpectedReceive receive = post_receive(g, root, 0, buffer, bytes);
    if (watch_marker) {
      ReceiveOrStrayAwaiter wait = received_or_stray(g, root, receive, kBroadcastMarkerStep);
      co_await wait;
      if (wait.stray()) throw_root_took_other_schedule(g, root, "the shared-memory gather");
    }
    co_await received(kName, receive);
    co_return;
  }
  std::vector<transport::RequestPtr> sends;
  for (int p = 0; p < g.size(); ++p)
    if (p != root) sends.push_back(g.isend(p, 0, buffer, bytes));
  co_await comm::all_of(std::move(sends));
}

/// A chain from the root through the ranks in order, pipelined in chunks: each rank forwards
/// a chunk as soon as it arrived, so every link carries the buffer once.
comm::Task chain_broadcast(Group& g, char* buffer, size_t count, size_t element_bytes, int root) {
  const int n = g.size();
  const int position = (g.rank() - root + n) % n;
  const int previous = (g.rank() + n - 1) % n, next = (g.rank() + 1) % n;
  const bool forwards = position + 1 < n;
  std::vector<ExpectedReceive> receives;
  if (position > 0)
    for (Chunk c : Chunks(count, chunk_elements(element_bytes)))
      receives.push_back(post_receive(g, previous, 0, buffer + c.first * element_bytes,
                                      c.count * element_bytes));
  std::vector<transport::RequestPtr> sends;
  size_t i = 0;
  for (Chunk c : Chunks(count, chunk_elements(element_bytes))) {
    if (position > 0) co_await received(kName, receives[i++]);
    if (forwards)
      sends.push_back(g.isend(next, 0, buffer + c.first * element_bytes, c.count * element_bytes));
  }
  co_await comm::all_of(std::move(sends));
}

}  // namespace

comm::Task message_broadcast(Algorithm a, Group& g, char* buffer, size_t count,
                             size_t element_bytes, int root, bool watch_marker) {
  // One message where the root may have taken the gather: its peers watch for the marker.
  if (a == Algorithm::direct || watch_marker)
    return direct_broadcast(g, buffer, count * element_bytes, root, watch_marker);
  return chain_broadcast(g, buffer, count, element_bytes, root);
}

void throw_root_took_other_schedule(const Group& g, int root, std::string_view schedule) {
  throw MismatchError(std::string(kName) + ": rank " + std::to_string(g.world_rank(root)) +
                          " took " + std::string(schedule) + " where rank " +
                          std::to_string(g.world_rank(g.rank())) +
                          " did not: the ranks disagree on the count",
                      true);
}

comm::Task broadcast(Group& g, void* buffer, size_t count, DType dtype, int root) {
  check_rank(kName, "root", g.size(), root);
  const size_t es = dtype_size(dtype);
  Algorithm a = select_algorithm(Collective::broadcast, g, count * es, count, dtype);
  auto data = static_cast<char*>(buffer);
  if (a == Algorithm::shm) return shm_broadcast(g, data, count, dtype, root);
  if (a == Algorithm::hierarchical) {
    // A gather of the root's block alone (root_block_gather): it crosses the network once per
    // host.
    RootBlockGather gather = root_block_gather(g, data, count, dtype, root);
    return hierarchical_all_gather(g, kName, gather.own, data, std::move(gather.blocks), dtype);
  }
  // Two ranks sharing memory send small broadcasts as messages and larger ones through
  // shm_broadcast, which starts with a marker to the peer: a peer whose count put it here while
  // the root's took it there fails at once, not at its deadline.
  const bool watch_marker = g.size() == 2 && g.transport_name() == "shm" && !message_schedule_forced();
  return message_broadcast(a, g, data, count, es, root, watch_marker);
}

}  // namespace seam::collectives
