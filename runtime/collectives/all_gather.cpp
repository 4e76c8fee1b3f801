#include <cstdint>
#include <cstring>
#include <numeric>

#include "runtime/collectives/blocks.h"
#include "runtime/collectives/chunks.h"
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/validate.h"

namespace seam::collectives {
namespace {

/// Copies this rank's block into place unless send already is that place (in-place call).
void place_own_block(const char* send, char* recv, std::span<const size_t> counts,
                     std::span<const size_t> off, int r, size_t es) {
  char* mine = recv + off[r] * es;
  if (mine != send && counts[r]) std::memcpy(mine, send, counts[r] * es);
}

/// A chunk the ring delivers into place, and whether it travels on to the right.
struct Arrival {
  ExpectedReceive receive;
  char* data;
  size_t bytes;
  bool forward;
};

}  // namespace

comm::Task direct_all_gather(Group& g, std::string_view collective, const char* send, char* recv,
                             std::vector<size_t> counts, DType dtype, uint32_t step) {
  const int n = g.size(), r = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  std::vector<ExpectedReceive> receives;
  // Empty blocks travel as empty messages: each receiver checks the size its peer sent.
  for (int p = 0; p < n; ++p)
    if (p != r)
      receives.push_back(post_receive(g, p, step, recv + off[p] * es, counts[p] * es));
  std::vector<transport::RequestPtr> sends;
  for (int p = 0; p < n; ++p)
    if (p != r) sends.push_back(g.isend(p, step, send, counts[r] * es));
  place_own_block(send, recv, counts, off, r, es);
  co_await received(collective, std::move(receives));
  co_await comm::all_of(std::move(sends));
}

comm::Task ring_all_gather(Group& g, std::string_view collective, const char* send, char* recv,
                           std::vector<size_t> counts, DType dtype, uint32_t step) {
  const int n = g.size(), r = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  const size_t chunk = chunk_elements(es);
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  place_own_block(send, recv, counts, off, r, es);
  // Round s receives block (r - 1 - s) mod n from the left straight into place and, but in the
  // last round, forwards each chunk to the right as soon as it lands.
  std::vector<Arrival> arrivals;
  for (int s = 0; s + 1 < n; ++s) {
    const int b = ((r - 1 - s) % n + n) % n;
    for (Chunk c : Chunks(counts[b], chunk)) {
      char* at = recv + (off[b] + c.first) * es;
      arrivals.push_back({post_receive(g, left, step, at, c.count * es), at, c.count * es,
                          s + 2 < n});
    }
  }
  std::vector<transport::RequestPtr> sends;
  if (n > 1)
    for (Chunk c : Chunks(counts[r], chunk))
      sends.push_back(g.isend(right, step, recv + (off[r] + c.first) * es, c.count * es));
  for (const Arrival& a : arrivals) {
    co_await received(collective, a.receive);
    if (a.forward) sends.push_back(g.isend(right, step, a.data, a.bytes));
  }
  co_await comm::all_of(std::move(sends));
}

namespace {

// The blocks stay in place on the shared-memory path (no allocation per call); the other
// schedules take them as a vector.
comm::Task all_gather_blocks(Group& g, Collective collective, const void* send, void* recv,
                             Blocks counts, DType dtype) {
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  Algorithm a = select_algorithm(collective, g, total * dtype_size(dtype), total, dtype);
  auto in = static_cast<const char*>(send);
  auto out = static_cast<char*>(recv);
  if (a == Algorithm::shm)
    return shm_all_gather(g, collective_name(collective), in, out, std::move(counts), dtype);
  std::vector<size_t> blocks(counts.begin(), counts.end());
  if (a == Algorithm::hierarchical)
    return hierarchical_all_gather(g, collective_name(collective), in, out, std::move(blocks),
                                   dtype);
  return aborting_on_mismatch(
      g, a,
      message_all_gather(a, g, collective_name(collective), in, out, std::move(blocks), dtype));
}

}  // namespace

comm::Task message_all_gather(Algorithm a, Group& g, std::string_view collective, const char* send,
                              char* recv, std::vector<size_t> counts, DType dtype) {
  if (a == Algorithm::direct) return direct_all_gather(g, collective, send, recv, std::move(counts), dtype, 0);
  return ring_all_gather(g, collective, send, recv, std::move(counts), dtype, 0);
}

comm::Task all_gather(Group& g, const void* send, void* recv, size_t send_count, DType dtype) {
  return all_gather_blocks(g, Collective::all_gather, send, recv,
                           Blocks(static_cast<size_t>(g.size()), send_count), dtype);
}

comm::Task all_gatherv(Group& g, const void* send, void* recv, std::span<const size_t> counts,
                       DType dtype) {
  check_counts("all_gatherv", g.size(), counts);
  return all_gather_blocks(g, Collective::all_gatherv, send, recv, Blocks(counts), dtype);
}

}  // namespace seam::collectives
