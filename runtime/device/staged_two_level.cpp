#include "runtime/device/staged_two_level.h"

#include <algorithm>
#include <vector>

#include "runtime/device/staged_flat.h"
#include "runtime/device/stream_scratch.h"

namespace seam::device::staged {
namespace {

/// The blocks of a call with one block per rank, regrouped for two levels: the ranks at each
/// place on their host together (place 0 of every host in host order, then place 1, ...), so
/// that a reduce-scatter or gather among a host's ranks moves one contiguous group per rank.
struct Grouped {
  std::vector<size_t> rank_at;    // rank r's block in the caller's (rank-order) buffer
  std::vector<size_t> grouped_at; // ... and in the grouped buffer
  std::vector<size_t> group;      // elements of each place's group (the local level's blocks)
  std::vector<size_t> across;     // the blocks of this rank's place, host by host (the cross level's)
  size_t total = 0;
};
Grouped grouped(const DeviceCommunicatorImpl& d, std::span<const size_t> counts) {
  const DeviceCommunicatorImpl& local = *d.local_level;
  const size_t L = static_cast<size_t>(local.size), H = d.ranks_by_host.size() / L;
  Grouped g;
  g.rank_at.resize(counts.size());
  g.grouped_at.resize(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) {
    g.rank_at[r] = g.total;
    g.total += counts[r];
  }
  size_t next = 0;
  g.group.assign(L, 0);
  for (size_t l = 0; l < L; ++l)
    for (size_t h = 0; h < H; ++h) {
      const size_t r = static_cast<size_t>(d.ranks_by_host[h * L + l]);
      g.grouped_at[r] = next;
      next += counts[r];
      g.group[l] += counts[r];
      if (l == static_cast<size_t>(local.rank)) g.across.push_back(counts[r]);
    }
  return g;
}

/// Copies every rank's block between the rank-order buffer and the grouped one, on `stream`.
void regroup(DeviceCommunicatorImpl& d, DeviceCall call, const Grouped& g, std::span<const size_t> counts,
             const void* from, void* to, bool to_grouped, size_t e, cudaStream_t stream) {
  for (size_t r = 0; r < counts.size(); ++r) {
    if (!counts[r]) continue;
    const size_t src = (to_grouped ? g.rank_at[r] : g.grouped_at[r]) * e;
    const size_t dst = (to_grouped ? g.grouped_at[r] : g.rank_at[r]) * e;
    d.check_launch(cudaMemcpyAsync(at(to, dst), at(from, src), counts[r] * e, cudaMemcpyDeviceToDevice, stream), call);
  }
}

}  // namespace

/// Reduce-scatter among the host's ranks over peer memory, each rank's share all-reduced with the
/// ranks of its place on the other hosts through the pipeline, all-gather among the host's ranks:
/// a rank copies and sends its share, not the whole buffer.
void two_level_all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype,
                          ReduceOp op, cudaStream_t stream) {
  DeviceCommunicatorImpl& local = *d.local_level;
  const size_t e = dtype_size(dtype), me = static_cast<size_t>(local.rank);
  const std::vector<Piece> pieces = host_shares(count, static_cast<size_t>(local.size), e);
  std::vector<size_t> shares;
  for (const Piece& x : pieces) shares.push_back(x.n);
  const size_t mine_at = pieces[me].lo;
  char* share = at(recv, mine_at * e);
  local.reduce_scatter_blocks(DeviceCall::reduce_scatterv, send, share, shares, dtype, op, stream);
  if (shares[me]) flat_all_reduce(*d.cross_pipeline, share, share, shares[me], dtype, op, stream);
  local.all_gather_blocks(DeviceCall::all_gatherv, share, recv, shares, dtype, stream);
}

/// Each host's ranks sum every block over peer memory, a place's group landing on the rank at
/// that place; its hosts' partial sums of its own block meet through the pipeline across hosts.
void two_level_reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                              DType dtype, ReduceOp op, cudaStream_t stream) {
  DeviceCommunicatorImpl& local = *d.local_level;
  const size_t e = dtype_size(dtype), me = static_cast<size_t>(local.rank);
  const Grouped g = grouped(d, counts);
  StreamScratch scratch(d, DeviceCall::reduce_scatterv, (up64(g.total * e) + g.group[me] * e), stream);
  char* share = scratch.get() + up64(g.total * e);
  regroup(d, DeviceCall::reduce_scatterv, g, counts, send, scratch.get(), true, e, stream);
  local.reduce_scatter_blocks(DeviceCall::reduce_scatterv, scratch.get(), share, g.group, dtype, op, stream);
  if (g.group[me])  // the same on every rank of this place
    flat_reduce_scatter(*d.cross_pipeline, static_cast<size_t>(d.host_index), share, recv, g.across, dtype, op,
                        stream);
}

/// This rank's block meets those of its place on the other hosts through the pipeline; the
/// host's ranks then gather those groups over peer memory.
void two_level_all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                          DType dtype, cudaStream_t stream) {
  DeviceCommunicatorImpl& local = *d.local_level;
  const size_t e = dtype_size(dtype), me = static_cast<size_t>(local.rank);
  const Grouped g = grouped(d, counts);
  StreamScratch scratch(d, DeviceCall::all_gatherv, g.total * e, stream);
  const size_t mine_at = g.grouped_at[static_cast<size_t>(d.ranks_by_host[me])];  // host 0's block of my place
  if (g.group[me])
    flat_all_gather(*d.cross_pipeline, static_cast<size_t>(d.host_index), send, scratch.get() + mine_at * e,
                    g.across, dtype, stream);
  local.all_gather_blocks(DeviceCall::all_gatherv, scratch.get() + mine_at * e, scratch.get(), g.group, dtype, stream);
  regroup(d, DeviceCall::all_gatherv, g, counts, scratch.get(), recv, false, e, stream);
}

/// The root's host broadcasts over peer memory; each rank there sends its share to the ranks of
/// its place on the other hosts through the pipeline, whose hosts gather the shares over peer
/// memory: every share crosses the network once per host, the host's ranks side by side.
void two_level_broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root,
                         cudaStream_t stream) {
  DeviceCommunicatorImpl& local = *d.local_level;
  const size_t L = static_cast<size_t>(local.size), e = dtype_size(dtype);
  const auto spot = std::find(d.ranks_by_host.begin(), d.ranks_by_host.end(), root) - d.ranks_by_host.begin();
  const int root_host = static_cast<int>(static_cast<size_t>(spot) / L);
  const int root_place = static_cast<int>(static_cast<size_t>(spot) % L);
  const bool root_here = root_host == d.host_index;
  if (root_here) local.broadcast(buffer, count, dtype, root_place, stream);
  const std::vector<Piece> shares = host_shares(count, L, e);
  const Piece mine = shares[static_cast<size_t>(local.rank)];
  if (mine.n)
    flat_broadcast(*d.cross_pipeline, root_here, root_host, at(buffer, mine.lo * e), mine.n, dtype, stream);
  if (!root_here) {
    std::vector<size_t> counts;
    for (const Piece& s : shares) counts.push_back(s.n);
    local.all_gather_blocks(DeviceCall::all_gatherv, at(buffer, mine.lo * e), buffer, counts, dtype, stream);
  }
}

}  // namespace seam::device::staged
