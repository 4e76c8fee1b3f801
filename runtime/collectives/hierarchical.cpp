// Two-level schedules for groups that span hosts with as many ranks on each (L per host, H
// hosts): the ranks of a host combine through their shared-memory region, and only one rank
// per host and block crosses the network. A flat ring over all n = H L ranks sends each rank's
// 2(n-1)/n of the buffer through the network links it crosses; here each rank sends 2(H-1)/H
// of 1/L of it, and the rest moves through shared memory. Open MPI's HAN and NCCL's trees over
// NVLink and the network split the work the same way.
#include <map>
#include <mutex>
#include <set>

#include "layouts/errors.h"
#include "layouts/log.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/hosts.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/scratch.h"
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
  explicit Turn(uint64_t communicator) : communicator_(communicator) {
    std::lock_guard lock(mutex());
    mine_ = queues()[communicator].issued++;
  }
  /// Ends this turn, finished or not (a failed call ends it too).
  ~Turn() {
    std::lock_guard lock(mutex());
    Queue& q = queues()[communicator_];
    q.ended.insert(mine_);
    while (q.ended.erase(q.serving)) ++q.serving;
  }
  Turn(const Turn&) = delete;
  Turn& operator=(const Turn&) = delete;
  bool up() const {
    std::lock_guard lock(mutex());
    return queues()[communicator_].serving == mine_;
  }

 private:
  struct Queue {
    uint64_t issued = 0, serving = 0;
    std::set<uint64_t> ended;  // turns that ended before every earlier one did
  };
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<uint64_t, Queue>& queues() {
    static std::map<uint64_t, Queue> q;
    return q;
  }
  uint64_t communicator_;
  uint64_t mine_ = 0;
};

/// The two views of a call: this rank's host, and the ranks with its place on theirs.
struct HostViews {
  explicit HostViews(Group& g)
      : layout(host_layout(g)),
        local(g, layout.local, layout.local_index, "shm"),
        cross(g, layout.cross, layout.host_index, "ucx") {}
  HostLayout layout;
  SubGroup local, cross;
};

void log_phases(std::string_view collective, const HostViews& v, Algorithm network) {
  log().debug("{}: hierarchical over {} hosts of {} ranks: shm on the host, {} over the network",
              collective, v.layout.hosts, v.layout.per_host, algorithm_name(network));
}

/// Host h's blocks in a host-major group: the counts of its ranks'.
std::vector<size_t> host_blocks(const std::vector<size_t>& counts, int h, int per_host) {
  auto first = counts.begin() + static_cast<ptrdiff_t>(h) * per_host;
  return {first, first + per_host};
}

/// Per host, the count of the block of the rank at `local_index` on it (host-major).
std::vector<size_t> blocks_at(const std::vector<size_t>& counts, const HostLayout& layout) {
  std::vector<size_t> at(static_cast<size_t>(layout.hosts));
  for (int h = 0; h < layout.hosts; ++h) at[h] = counts[h * layout.per_host + layout.local_index];
  return at;
}

/// A two-level call, run in its Turn. A mismatch aborts the communicator: the ranks that find
/// it (those of one host, or of one pair of hosts) stop, while ranks of other hosts may wait on
/// them in a later phase and would only time out.
comm::Task two_level_call(Group& g, comm::Task call) {
  const Turn turn(g.communicator_id());
  try {
    co_await comm::until([&] { return turn.up(); });
    co_await comm::run(call);
  } catch (const MismatchError& e) {
    throw MismatchError(e.what(), true);
  }
}

comm::Task all_reduce_over_hosts(Group& g, const char* send, char* recv, size_t count,
                                 DType dtype, ReduceOp op) {
  HostViews v(g);
  const size_t es = dtype_size(dtype);
  std::vector<size_t> blocks = even_blocks(count, v.layout.per_host);
  const size_t mine = blocks[v.layout.local_index];
  char* block = recv + block_offsets(blocks)[v.layout.local_index] * es;
  const Algorithm network = message_algorithm(mine * es);
  log_phases("all_reduce", v, network);
  // The host's sum of block j lands on its rank j (in place when send == recv)...
  comm::Task reduce = shm_reduce_scatter(v.local, "all_reduce", send, block, blocks, dtype, op);
  co_await comm::run(reduce);
  // ...which sums it with rank j of every other host...
  comm::Task across = network == Algorithm::direct
                          ? direct_all_reduce(v.cross, block, block, mine, dtype, op)
                          : ring_all_reduce(v.cross, block, block, mine, dtype, op);
  co_await comm::run(across);
  // ...and the host's ranks gather the finished blocks.
  comm::Task gather = shm_all_gather(v.local, "all_reduce", block, recv, std::move(blocks), dtype);
  co_await comm::run(gather);
}

comm::Task reduce_scatter_over_hosts(Group& g, std::string_view collective, const char* send,
                                     char* out, std::vector<size_t> counts, DType dtype,
                                     ReduceOp op) {
  HostViews v(g);
  const int hosts = v.layout.hosts, per_host = v.layout.per_host;
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  const std::vector<size_t> across = blocks_at(counts, v.layout);
  const auto at = block_offsets(across);
  const Algorithm network = message_algorithm(at.back() * es);
  log_phases(collective, v, network);
  // Host h's blocks, summed over this host's ranks: the block of rank j on host h lands on
  // this host's rank j (one shared-memory reduce-scatter per host: its blocks are consecutive).
  Scratch partial(at.back() * es);
  for (int h = 0; h < hosts; ++h) {
    comm::Task reduce = shm_reduce_scatter(v.local, collective, send + off[h * per_host] * es,
                                           partial.data() + at[h] * es,
                                           host_blocks(counts, h, per_host), dtype, op);
    co_await comm::run(reduce);
  }
  // The hosts' partial sums of each block meet on its rank.
  comm::Task reduce = network == Algorithm::direct
                          ? direct_reduce_scatter(v.cross, collective, partial.data(), out,
                                                  across, dtype, op, 0)
                          : ring_reduce_scatter(v.cross, collective, partial.data(), out, across,
                                                dtype, op, 0);
  co_await comm::run(reduce);
}

comm::Task all_gather_over_hosts(Group& g, std::string_view collective, const char* send,
                                 char* recv, std::vector<size_t> counts, DType dtype) {
  HostViews v(g);
  const int hosts = v.layout.hosts, per_host = v.layout.per_host;
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  const std::vector<size_t> across = blocks_at(counts, v.layout);
  const auto at = block_offsets(across);
  const Algorithm network = message_algorithm(at.back() * es);
  log_phases(collective, v, network);
  // This rank's block meets the blocks of the ranks at its place on the other hosts...
  Scratch gathered(at.back() * es);
  comm::Task gather = network == Algorithm::direct
                          ? direct_all_gather(v.cross, collective, send, gathered.data(), across,
                                              dtype, 0)
                          : ring_all_gather(v.cross, collective, send, gathered.data(), across,
                                            dtype, 0);
  co_await comm::run(gather);
  // ...and the host's ranks gather each host's blocks into place.
  for (int h = 0; h < hosts; ++h) {
    comm::Task place = shm_all_gather(v.local, collective, gathered.data() + at[h] * es,
                                      recv + off[h * per_host] * es,
                                      host_blocks(counts, h, per_host), dtype);
    co_await comm::run(place);
  }
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
