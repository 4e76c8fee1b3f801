#include "runtime/collectives/selection.h"

#include "layouts/config.h"
#include "layouts/errors.h"
#include "layouts/log.h"

namespace seam::collectives {
namespace {

// Below this, one round of direct messages beats the ring's 2(n-1) pipelined steps.
constexpr size_t kDefaultSmallMessageBytes = 64 * 1024;

Algorithm by_size(size_t bytes) {
  size_t small = Config::get().small_msg_bytes ? Config::get().small_msg_bytes
                                               : kDefaultSmallMessageBytes;
  return bytes <= small ? Algorithm::direct : Algorithm::ring;
}

bool has_shm_schedule(Collective c) {
  return c == Collective::all_reduce || c == Collective::reduce_scatter ||
         c == Collective::reduce_scatterv || c == Collective::all_gather ||
         c == Collective::all_gatherv;
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
  }
  return "?";
}

Algorithm choose_algorithm(Collective c, int ranks, size_t bytes, std::string_view transport) {
  const std::string& forced = Config::get().algorithm;
  if (!forced.empty() && forced != "direct" && forced != "ring" && forced != "shm")
    throw ValueError("SEAM_ALGO: unknown algorithm '" + forced + "' (direct, ring or shm)");
  // Through shared memory whenever every rank is local: it beats messages at every size.
  const bool shm = ranks > 1 && transport == "shm" && has_shm_schedule(c);
  Algorithm chosen = shm && forced.empty() ? Algorithm::shm : by_size(bytes);
  if (forced == "direct") chosen = Algorithm::direct;
  if (forced == "ring") chosen = Algorithm::ring;
  if (forced == "shm" && shm) chosen = Algorithm::shm;
  // scatterv and barrier have one schedule each.
  if (c == Collective::scatterv || c == Collective::barrier) chosen = Algorithm::direct;
  return chosen;
}

Algorithm select_algorithm(Collective c, const Group& g, size_t bytes, size_t count, DType dtype) {
  Algorithm chosen = choose_algorithm(c, g.size(), bytes, g.transport_name());
  log().debug("{}: algorithm={} count={} dtype={} ranks={} transport={}", collective_name(c),
              algorithm_name(chosen), count, dtype_name(dtype), g.size(), g.transport_name());
  return chosen;
}

}  // namespace seam::collectives
