// Two-level schedules for groups that span hosts with as many ranks on each (L per host, H
// hosts): the ranks of a host combine through their shared-memory region, and only one rank
// per host and block crosses the network. An all-reduce of S bytes by a flat ring over all
// n = H L ranks takes 2(n-1) steps, each a network latency, and every rank's messages go through
// the transports, its host's peers' included; here the network part is 2(H-1) steps, run by
// the L ranks of a host side by side on their 1/L shares (each host sends 2(H-1)/H S in all),
// and the rest moves through shared memory. Open MPI's HAN and NCCL's trees over NVLink and the
// network split the work the same way. The all-reduce also runs on uneven hosts, in as many
// shares as the smallest host has ranks.
#include <cstdint>
#include <algorithm>
#include <cstring>

#include "layouts/log.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/sub_group.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/scratch.h"
#include "runtime/collectives/shm/backend.h"
#include "runtime/collectives/selection.h"

namespace seam::collectives {
namespace {

/// Two-level calls of one communicator run one at a time per process, in issue order: their
/// shared-memory phases share the host's region, whose rounds every rank of the host must take
/// in the same order, and a call holds the region one phase at a time (another call's phase
/// could slip in between on one rank and not on another).
class Turn {
 public:
  /// The next turn of the communicator's calls (taken at the call's start: in issue order).
  explicit Turn(ShmBackend& backend) : backend_(backend), mine_(backend.take_turn()) {}
  /// Ends this turn, finished or not (a failed call ends it too).
  ~Turn() { backend_.end_turn(mine_); }
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  bool up() const { return backend_.turn_up(mine_); }

 private:
  ShmBackend& backend_;
  uint64_t mine_;
};

/// All-reduces on even hosts up to this size take two waits (see all_reduce_over_hosts), though every rank
/// then sends the whole buffer over the network, not its 1/L share: up to here the wait saved
/// costs more than the extra bytes.
constexpr size_t kTwoWaitBytes = 16 * 1024;

/// The two views of a call: this rank's host, and the ranks with its place on theirs.
struct HostViews {
  explicit HostViews(Group& g)
      : layout(*g.hosts()),
        local(g, layout.local, layout.local_index, "shm"),
        cross(g, layout.cross, layout.host_index, "ucx") {}
  const HostLayout& layout;  // the communicator's, which the call's group holds
  SubGroup local, cross;
};

void log_phases(std::string_view collective, const HostViews& v, Algorithm network) {
  if (v.layout.per_host > 0)
    SEAM_LOG_DEBUG("{}: hierarchical over {} hosts of {} ranks: shm on the host, {} over the "
                   "network", collective, v.layout.hosts, v.layout.per_host, algorithm_name(network));
  else
    SEAM_LOG_DEBUG("{}: hierarchical over {} uneven hosts (the fewest ranks {}): shm on the host, "
                   "{} over the network",
                   collective, v.layout.hosts, v.layout.fewest, algorithm_name(network));
}

/// A reduce-scatter's or gather's blocks in host order: host h's ranks' blocks together, in rank
/// order (the caller's order where hosts hold consecutive ranks); the blocks of this rank's
/// place on every host are the ones it moves over the network.
struct HostBlocks {
  /// `kind` picks the network phase's schedule; `collective` names the call in logs.
  HostBlocks(Group& g, Collective kind, std::string_view collective, const std::vector<size_t>& counts,
             DType dtype)
      : views(g), es(dtype_size(dtype)), offsets(block_offsets(counts)) {
    const HostLayout& layout = views.layout;
    for (int r : layout.ranks_by_host) ordered.push_back(counts[static_cast<size_t>(r)]);
    ordered_at = block_offsets(ordered);
    for (int h = 0; h < layout.hosts; ++h)
      across.push_back(ordered[static_cast<size_t>(h * layout.per_host + layout.local_index)]);
    at = block_offsets(across);
    network = message_algorithm(kind, at.back() * es, layout.hosts);
    log_phases(collective, views, network);
  }
  /// Host h's ranks' blocks, and where the first starts in host order (elements).
  std::vector<size_t> of_host(int h) const {
    auto first = ordered.begin() + static_cast<ptrdiff_t>(h) * views.layout.per_host;
    return {first, first + views.layout.per_host};
  }
  size_t host_offset(int h) const { return ordered_at[static_cast<size_t>(h * views.layout.per_host)]; }
  /// Whether host order differs from the caller's (hosts do not hold consecutive ranks): the
  /// blocks then move through a copy in host order.
  bool reordered() const { return !views.layout.host_major; }
  /// Copies every block from the caller's order to host order, or back.
  void to_host_order(const char* from, char* to) const { move_blocks(from, to, true); }
  void from_host_order(const char* from, char* to) const { move_blocks(from, to, false); }

  HostViews views;
  size_t es;
  Blocks offsets;                      // the caller's blocks' offsets, by rank
  std::vector<size_t> ordered;         // the blocks in host order
  Blocks ordered_at;                   // ... and their offsets
  std::vector<size_t> across;          // the blocks that cross the network
  Blocks at;                           // ... and their offsets
  Algorithm network;

 private:
  void move_blocks(const char* from, char* to, bool to_host) const {
    for (size_t i = 0; i < ordered.size(); ++i) {
      const size_t caller = offsets[static_cast<size_t>(views.layout.ranks_by_host[i])] * es;
      const size_t host = ordered_at[i] * es;
      std::memcpy(to + (to_host ? host : caller), from + (to_host ? caller : host), ordered[i] * es);
    }
  }
};

/// A two-level call, run in its Turn. A mismatch aborts the communicator: the ranks that find
/// it (those of one host, or of one pair of hosts) stop, while ranks of other hosts may wait on
/// them in a later phase and would only time out.
comm::Task two_level_call(Group& g, comm::Task call) {
  const Turn turn(*g.shm());
  co_await comm::until([&] { return turn.up(); });
  comm::Task aborting = aborting_on_mismatch(g, Algorithm::hierarchical, std::move(call));
  co_await comm::run(aborting);
}

comm::Task all_reduce_over_hosts(Group& g, const char* send, char* recv, size_t count,
                                 DType dtype, ReduceOp op) {
  HostViews v(g);
  const size_t es = dtype_size(dtype);
  const bool even = v.layout.per_host > 0;
  if (even && count * es <= kTwoWaitBytes) {
    // Latency-bound: two waits, not three. The host's ranks each get the host's sum, then
    // every rank sums the whole buffer with its place on every other host (every host's ranks
    // run the same schedule on the same sums, so all get the same bits).
    const Algorithm network = message_algorithm(Collective::all_reduce, count * es, v.layout.hosts);
    log_phases("all_reduce", v, network);
    comm::Task reduce = shm_all_reduce(v.local, send, recv, count, dtype, op);
    co_await comm::run(reduce);
    comm::Task across = message_all_reduce(network, v.cross, recv, recv, count, dtype, op);
    co_await comm::run(across);
    co_return;
  }
  // The buffer in as many blocks as the host with the fewest ranks has: a host's ranks past
  // those take no block (uneven hosts), and their share of the network phase goes to the others.
  const int blocks_per_host = v.layout.fewest;
  const auto shares = even_blocks(count, blocks_per_host);
  std::vector<size_t> blocks(v.layout.local.size(), 0);
  std::copy(shares.begin(), shares.end(), blocks.begin());
  const size_t mine = blocks[v.layout.local_index];
  char* block = recv + block_offsets(blocks)[v.layout.local_index] * es;
  const Algorithm network = message_algorithm(Collective::all_reduce, shares[0] * es, v.layout.hosts);
  log_phases("all_reduce", v, network);
  // The host's sum of block j lands on its rank j (in place when send == recv)...
  if (blocks.size() == 1) {  // a host of one rank: its buffer is the host's sum
    if (recv != send) std::memcpy(recv, send, count * es);
  } else {
    comm::Task reduce =
        shm_reduce_scatter(v.local, "all_reduce", send, block, Blocks(blocks), dtype, op);
    co_await comm::run(reduce);
  }
  // ...which sums it with rank j of every other host...
  if (v.layout.local_index < blocks_per_host) {
    comm::Task across = message_all_reduce(network, v.cross, block, block, mine, dtype, op);
    co_await comm::run(across);
  }
  // ...and the host's ranks gather the finished blocks.
  if (blocks.size() > 1) {
    comm::Task gather = shm_all_gather(v.local, "all_reduce", block, recv, Blocks(blocks), dtype);
    co_await comm::run(gather);
  }
}

comm::Task reduce_scatter_over_hosts(Group& g, std::string_view collective, const char* send,
                                     char* out, std::vector<size_t> counts, DType dtype,
                                     ReduceOp op) {
  HostBlocks b(g, Collective::reduce_scatterv, collective, counts, dtype);
  const size_t es = b.es;
  Scratch reordered(b.reordered() ? b.ordered_at.back() * es : 0);
  if (b.reordered()) b.to_host_order(send, reordered.data());
  const char* source = b.reordered() ? reordered.data() : send;
  // Host h's blocks, summed over this host's ranks: the block of rank j on host h lands on
  // this host's rank j (one shared-memory reduce-scatter per host)...
  Scratch partial(b.at.back() * es);
  const int hosts = b.views.layout.hosts, host = b.views.cross.rank();
  std::vector<char> summed(static_cast<size_t>(hosts), 0);
  auto sum_on_host = [&](int h) -> comm::Task {
    comm::Task reduce =
        shm_reduce_scatter(b.views.local, collective, source + b.host_offset(h) * es,
                           partial.data() + b.at[h] * es, Blocks(b.of_host(h)), dtype, op);
    co_await comm::run(reduce);
    summed[static_cast<size_t>(h)] = 1;
  };
  // The sums run in the order the ring sends them: host - 1's first, this host's own last. Every
  // rank of a host takes that order whatever its network schedule (that depends on its blocks).
  auto sum_all = [&]() -> comm::Task {
    for (int k = 1; k <= hosts; ++k) {
      comm::Task sum = sum_on_host(((host - k) % hosts + hosts) % hosts);
      co_await comm::run(sum);
    }
  };
  comm::Task sums = sum_all();
  // ...and the hosts' partial sums of each block meet on its rank: on a ring, while the host's
  // ranks still sum the later blocks.
  if (b.network != Algorithm::ring) {
    co_await comm::run(sums);
    comm::Task reduce = message_reduce_scatter(b.network, b.views.cross, collective, partial.data(),
                                               out, b.across, dtype, op);
    co_await comm::run(reduce);
    co_return;
  }
  comm::Task ring = ring_reduce_scatter(b.views.cross, collective, partial.data(), out, b.across,
                                        dtype, op, 0, &summed);
  co_await comm::together(sums, ring);
}

comm::Task all_gather_over_hosts(Group& g, std::string_view collective, const char* send,
                                 char* recv, std::vector<size_t> counts, DType dtype) {
  HostBlocks b(g, Collective::all_gatherv, collective, counts, dtype);
  const size_t es = b.es;
  // This rank's block meets the blocks of the ranks at its place on the other hosts...
  Scratch gathered(b.at.back() * es);
  comm::Task gather =
      message_all_gather(b.network, b.views.cross, collective, send, gathered.data(), b.across, dtype);
  co_await comm::run(gather);
  // ...and the host's ranks gather each host's blocks into place.
  Scratch reordered(b.reordered() ? b.ordered_at.back() * es : 0);
  char* target = b.reordered() ? reordered.data() : recv;
  for (int h = 0; h < b.views.layout.hosts; ++h) {
    comm::Task place = shm_all_gather(b.views.local, collective, gathered.data() + b.at[h] * es,
                                      target + b.host_offset(h) * es, Blocks(b.of_host(h)), dtype);
    co_await comm::run(place);
  }
  if (b.reordered()) b.from_host_order(reordered.data(), recv);
}

}  // namespace

comm::Task hierarchical_all_reduce(Group& g, const char* send, char* recv, size_t count,
                                   DType dtype, ReduceOp op) {
  return two_level_call(g, all_reduce_over_hosts(g, send, recv, count, dtype, op));
}

comm::Task hierarchical_reduce_scatter(Group& g, std::string_view collective, const char* send,
                                       char* out, std::vector<size_t> counts, DType dtype,
                                       ReduceOp op) {
  return two_level_call(
      g, reduce_scatter_over_hosts(g, collective, send, out, std::move(counts), dtype, op));
}

comm::Task hierarchical_all_gather(Group& g, std::string_view collective, const char* send,
                                   char* recv, std::vector<size_t> counts, DType dtype) {
  return two_level_call(
      g, all_gather_over_hosts(g, collective, send, recv, std::move(counts), dtype));
}

}  // namespace seam::collectives
