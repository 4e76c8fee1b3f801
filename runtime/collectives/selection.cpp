#include "runtime/collectives/selection.h"

#include <atomic>
#include <optional>

#include "layouts/config.h"
#include "seam/errors.h"
#include "layouts/log.h"

namespace seam::collectives {
namespace {

// Below this, one round of direct messages beats the ring's 2(n-1) pipelined steps.
constexpr size_t kDefaultSmallMessageBytes = 64 * 1024;
// All-reduces of this many ranks or more weigh direct by what each rank sends, its whole buffer
// to n-1 peers, and up to kHalvingBytes take recursive halving and doubling: 2 log2(n) messages
// against the ring's 2 (n-1), for the same bytes. Halving beats direct wherever direct's n-1
// whole-buffer sends add up (all but the smallest calls at 4 ranks), and the ring up to about
// kHalvingBytes; above it the ring's pipeline wins.
constexpr int kHalvingRanks = 4;
constexpr size_t kHalvingBytes = 128 * 1024;

bool has_shm_schedule(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter ||
         c == Collective::reduce_scatterv || c == Collective::all_gather ||
         c == Collective::all_gatherv || c == Collective::broadcast;
}

/// Whether g's layout fits c's two-level schedule: the all-reduce's, hosts of which one holds
/// two ranks or more; the others' (the broadcast's is the gather's), as many ranks on each
/// host, two or more.
bool two_level_fits(Collective c, const Group& g) {
  const HostLayout* hosts = g.hosts();
  if (!hosts) return false;
  return c == Collective::all_reduce ? hosts->two_level_all_reduce() : hosts->two_level();
}

constexpr size_t kTwoRankShmBroadcastBytes = 64 * 1024;

/// Whether a broadcast among `ranks` local ranks takes the message schedules rather than shared
/// memory (shm_broadcast). From three ranks shared memory wins at every size. At two ranks a
/// small broadcast is one message, which the shm transport moves without the root waiting for
/// its peer. From kTwoRankShmBroadcastBytes they take the gather, whose single-copy schedule
/// (where the ranks may read each other's memory, and the tuner measures it faster) has both
/// cores copy, the root writing part of the buffer into its peer while the peer reads the rest.
bool broadcast_by_messages(int ranks, size_t bytes) {
  return ranks == 2 && bytes < kTwoRankShmBroadcastBytes;
}

std::atomic<Algorithm> last{Algorithm::direct};  // read by another thread at most, for display

/// SEAM_ALGO, named once per process (the configuration is read once): every call consults it,
/// and a string comparison per name cost a small call tens of nanoseconds.
struct ForcedAlgorithm {
  std::optional<Algorithm> algorithm;  ///< empty: SEAM_ALGO unset, or a name no schedule has
  bool unknown = false;                ///< SEAM_ALGO names no schedule: every call throws
  bool message() const {
    return algorithm == Algorithm::direct || algorithm == Algorithm::ring ||
           algorithm == Algorithm::halving;
  }
};

const ForcedAlgorithm& forced_algorithm() {
  static const ForcedAlgorithm forced = [] {
    const std::string& name = Config::get().algorithm;
    ForcedAlgorithm f;
    for (Algorithm a : {Algorithm::direct, Algorithm::ring, Algorithm::halving, Algorithm::shm,
                        Algorithm::hierarchical})
      if (name == algorithm_name(a)) f.algorithm = a;
    f.unknown = !name.empty() && !f.algorithm;
    return f;
  }();
  return forced;
}

}  // namespace

std::string_view collective_name(Collective c) {
  switch (c) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::reduce_scatterv: return "reduce_scatterv";
    case Collective::all_gather: return "all_gather";
    case Collective::all_gatherv: return "all_gatherv";
    case Collective::broadcast: return "broadcast";
    case Collective::scatterv: return "scatterv";
    case Collective::barrier: return "barrier";
  }
  return "?";
}

std::string_view algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::direct: return "direct";
    case Algorithm::ring: return "ring";
    case Algorithm::shm: return "shm";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::halving: return "halving";
  }
  return "?";
}

Algorithm message_algorithm(Collective c, size_t bytes, int ranks) {
  const std::optional<Algorithm> forced = forced_algorithm().algorithm;
  if (forced == Algorithm::direct || forced == Algorithm::ring) return *forced;
  if (forced == Algorithm::halving && c == Collective::all_reduce) return Algorithm::halving;
  size_t small = Config::get().small_msg_bytes ? Config::get().small_msg_bytes
                                               : kDefaultSmallMessageBytes;
  if (c == Collective::all_reduce && ranks >= kHalvingRanks) {
    if (bytes * static_cast<size_t>(ranks - 1) <= small) return Algorithm::direct;
    return bytes <= kHalvingBytes ? Algorithm::halving : Algorithm::ring;
  }
  return bytes <= small ? Algorithm::direct : Algorithm::ring;
}

bool message_schedule_forced() { return forced_algorithm().message(); }

Algorithm choose_algorithm(Collective c, int ranks, size_t bytes, std::string_view transport,
                           bool two_level) {
  if (forced_algorithm().unknown)
    throw ValueError("SEAM_ALGO: unknown algorithm '" + Config::get().algorithm +
                     "' (direct, ring, halving, shm or hierarchical)");
  // scatterv and barrier have one schedule each.
  if (c == Collective::scatterv || c == Collective::barrier) return Algorithm::direct;
  // Through shared memory whenever every rank is local: it beats messages at every size. Over
  // hosts, the two-level schedules: every size sends fewer messages and bytes over the network.
  // A forced message schedule takes the call off them; another forced name applies where it can.
  if (!message_schedule_forced() && has_shm_schedule(c)) {
    const bool by_messages = c == Collective::broadcast && broadcast_by_messages(ranks, bytes);
    if (ranks > 1 && transport == "shm" && !by_messages) return Algorithm::shm;
    if (two_level && transport == "shm+ucx") return Algorithm::hierarchical;
  }
  return message_algorithm(c, bytes, ranks);
}

Algorithm select_algorithm(Collective c, const Group& g, size_t bytes, size_t count, DType dtype) {
  Algorithm chosen = choose_algorithm(c, g.size(), bytes, g.transport_name(), two_level_fits(c, g));
  note_algorithm(chosen);
  SEAM_LOG_DEBUG("{}: algorithm={} count={} dtype={} ranks={} transport={}", collective_name(c),
                 algorithm_name(chosen), count, dtype_name(dtype), g.size(), g.transport_name());
  return chosen;
}

Algorithm last_algorithm() { return last.load(std::memory_order_relaxed); }

void note_algorithm(Algorithm a) { last.store(a, std::memory_order_relaxed); }

}  // namespace seam::collectives
