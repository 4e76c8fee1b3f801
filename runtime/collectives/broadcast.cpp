#include <string>

#include "layouts/errors.h"
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

/// Rethrows `e`, found in `receive` from the root. An empty message where data was expected is
/// the root's marker of shm_broadcast's gather, which waits for this rank: then the error aborts
/// the communicator, so that the root hears of it at once.
[[noreturn]] void rethrow_from_root(const MismatchError& e, const ExpectedReceive& receive) {
  const transport::Request& r = *receive.request;
  if (receive.bytes && !r.failed() && r.received_bytes() == 0)
    throw MismatchError(std::string(e.what()) + " (the root took the shared-memory gather)", true);
  throw e;
}

/// The root sends the whole buffer to every rank.
comm::Task direct_broadcast(Group& g, char* buffer, size_t bytes, int root) {
  if (g.rank() != root) {
    const ExpectedReceive receive = post_receive(g, root, 0, buffer, bytes);
    try {
      co_await received(kName, receive);
    } catch (const MismatchError& e) {
      rethrow_from_root(e, receive);
    }
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
    if (position > 0) {
      try {
        co_await received(kName, receives[i]);
      } catch (const MismatchError& e) {
        if (position == 1 && i == 0) rethrow_from_root(e, receives[i]);
        throw;
      }
      ++i;
    }
    if (forwards)
      sends.push_back(g.isend(next, 0, buffer + c.first * element_bytes, c.count * element_bytes));
  }
  co_await comm::all_of(std::move(sends));
}

}  // namespace

comm::Task message_broadcast(Algorithm a, Group& g, char* buffer, size_t count,
                             size_t element_bytes, int root) {
  if (a == Algorithm::direct) return direct_broadcast(g, buffer, count * element_bytes, root);
  return chain_broadcast(g, buffer, count, element_bytes, root);
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
  return message_broadcast(a, g, data, count, es, root);
}

}  // namespace seam::collectives
