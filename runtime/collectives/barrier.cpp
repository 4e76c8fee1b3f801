#include <cstdint>
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/selection.h"

namespace seam::collectives {
namespace {

/// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k;
/// after ceil(log2 n) rounds every rank has heard, transitively, from every other.
comm::Task dissemination_barrier(Group& g) {
  const int n = g.size(), r = g.rank();
  char token = 0, incoming = 0;
  uint32_t round = 0;
  for (int distance = 1; distance < n; distance *= 2, ++round) {
    auto receive = post_receive(g, (r - distance + n) % n, round, &incoming, 1);
    std::vector<transport::RequestPtr> send{g.isend((r + distance) % n, round, &token, 1)};
    co_await received("barrier", receive);
    co_await comm::all_of(std::move(send));
  }
}

}  // namespace

comm::Task barrier(Group& g) {
  select_algorithm(Collective::barrier, g, 0, 0, DType::u8);
  return dissemination_barrier(g);
}

}  // namespace seam::collectives
