#include "tools/info/explain.h"

#include <cstdio>
#include <string>

#include "layouts/config.h"
#include "seam/errors.h"
#include "runtime/collectives/selection.h"
#include "tools/common/cli.h"
#if SEAM_HAVE_CUDA
#include "runtime/device/staged_pipeline.h"
#include "runtime/device/select.h"
#endif

namespace seam::info {
namespace {

using collectives::Algorithm;
using collectives::Collective;

Collective collective_of(const std::string& name) {
  for (Collective c : {Collective::all_reduce, Collective::reduce_scatter, Collective::reduce_scatterv,
                       Collective::all_gather, Collective::all_gatherv, Collective::broadcast, Collective::scatterv,
                       Collective::barrier})
    if (collectives::collective_name(c) == name) return c;
  throw ValueError("--explain: unknown collective '" + name +
                   "' (all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast, scatterv, "
                   "barrier)");
}

std::string name(Algorithm a) { return std::string(collectives::algorithm_name(a)); }

}  // namespace

void explain(const char* collective, const char* bytes_text, const char* ranks_text) {
  const Collective c = collective_of(collective);
  const size_t bytes = cli::parse_bytes("--explain BYTES", bytes_text, uint64_t{1} << 40);
  const int ranks = static_cast<int>(cli::parse_int("--explain RANKS", ranks_text, 1, 1 << 16));
  auto row = [](const std::string& where, const std::string& what) {
    std::printf("  %-40s %s\n", (where + ":").c_str(), what.c_str());
  };
  std::printf("%s of %zu bytes (all ranks' blocks) on %d ranks, under the current SEAM_* settings:\n", collective,
              bytes, ranks);
  const Algorithm local = choose_algorithm(c, ranks, bytes, "shm");
  row("host, one host (shm)",
      name(local) + (local == Algorithm::shm ? " (the schedule is tuned per size class among the slots and single-copy; "
                                               "SEAM_SHM_SCHEDULE forces one; SharedHostMemory buffers go zero-copy)"
                                             : ""));
  row("host, one rank a host (ucx)", name(choose_algorithm(c, ranks, bytes, "ucx")));
  if (ranks >= 4 && ranks % 2 == 0) {
    const int per_host = ranks / 2;
    const Algorithm two = choose_algorithm(c, ranks, bytes, "shm+ucx", true);
    std::string what = name(two);
    if (two == Algorithm::hierarchical)
      what += " (shared memory on each host, then " +
              name(collectives::message_algorithm(c, bytes / static_cast<size_t>(per_host), 2)) +
              " between the hosts on each rank's 1/" + std::to_string(per_host) + " share)";
    row("host, 2 hosts of " + std::to_string(per_host) + " ranks (shm+ucx)", what);
  }
#if SEAM_HAVE_CUDA
  row("device, one host (peer memory)",
      c == Collective::all_reduce
          ? std::string(device::algo_name(device::select_all_reduce(bytes, ranks, Config::get().cuda_algorithm))) +
                " (SEAM_CUDA_ALGO overrides)"
          : "the " + std::string(collective) + " kernel through the workspaces");
  const size_t chunk = static_cast<size_t>(Config::get().cuda_staged_chunk_kb) << 10;
  // A block collective's slot also holds the largest rank's piece (runtime/device/staged.cpp).
  const bool blocks = c != Collective::all_reduce && c != Collective::broadcast;
  auto staged = [&](size_t b) {
    const size_t k = device::staged_chunks(blocks ? b + b / static_cast<size_t>(ranks) : b, chunk);
    return "staged in " + std::to_string(k) + " chunk" + (k == 1 ? "" : "s") + " of " +
           std::to_string((b + k - 1) / k) + " bytes through pinned host memory (copies, network and copies back "
           "overlapping; SEAM_CUDA_STAGED_CHUNK_KB caps a chunk)";
  };
  const bool device_call = c != Collective::scatterv && c != Collective::barrier;
  const bool two_levels = ranks >= 4 && ranks % 2 == 0 && device_call;
  if (two_levels) {
    const size_t share = bytes / static_cast<size_t>(ranks / 2);
    const std::string across = "each rank's " + std::to_string(share) + "-byte share with the other host's rank at its place, " + staged(share);
    std::string how;
    if (c == Collective::all_reduce)
      how = "reduce-scatter over peer memory on each host; " + across + ", all-reduced; all-gather over peer memory";
    else if (c == Collective::reduce_scatter || c == Collective::reduce_scatterv)
      how = "each place's blocks summed over peer memory on each host; " + across + ", reduce-scattered";
    else if (c == Collective::all_gather || c == Collective::all_gatherv)
      how = across + ", gathered; then gathered over peer memory on each host";
    else
      how = "the root's host broadcasts over peer memory; " + across + "; the other host gathers the shares";
    row("device, 2 hosts of " + std::to_string(ranks / 2) + " ranks, peer memory on each", "two levels: " + how);
  }
  if (device_call)
    row(two_levels ? "device, no peer access or uneven hosts" : "device, across hosts or no peer access",
        staged(bytes) + ", each chunk by the host path above");
#else
  row("device", "not built (no nvcc at build time)");
#endif
}

}  // namespace seam::info
