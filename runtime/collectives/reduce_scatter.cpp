#include <cstdint>
#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/reduce/reduce.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/chunks.h"
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/scratch.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/validate.h"

namespace seam::collectives {

comm::Task direct_reduce_scatter(Group& g, std::string_view collective, const char* send,
                                 char* out, std::vector<size_t> counts, DType dtype, ReduceOp op,
                                 uint32_t step) {
  const int n = g.size(), r = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  const size_t mine = counts[r] * es;
  Scratch staging((n - 1) * mine);
  Sources sources(n);
  std::vector<ExpectedReceive> receives;
  for (int p = 0; p < n; ++p) {
    if (p == r) {
      sources[p] = send + off[r] * es;
      continue;
    }
    char* slot = staging.data() + (p < r ? p : p - 1) * mine;
    sources[p] = slot;
    receives.push_back(post_receive(g, p, step, slot, mine));  // empty blocks too: see Chunks
  }
  std::vector<transport::RequestPtr> sends;
  for (int p = 0; p < n; ++p)
    if (p != r) sends.push_back(g.isend(p, step, send + off[p] * es, counts[p] * es));
  co_await received(collective, std::move(receives));
  kernels::reduce(out, sources, counts[r], dtype, op);
  co_await comm::all_of(std::move(sends));
}

comm::Task ring_reduce_scatter(Group& g, std::string_view collective, const char* send, char* out,
                               std::vector<size_t> counts, DType dtype, ReduceOp op,
                               uint32_t step, const std::vector<char>* ready) {
  const int n = g.size(), r = g.rank();
  const size_t es = dtype_size(dtype);
  const auto off = block_offsets(counts);
  if (n == 1) {
    if (out != send && counts[0]) std::memcpy(out, send, counts[0] * es);
    co_return;
  }
  const size_t chunk = chunk_elements(es);
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  // In round s this rank forwards the partial sum of block (r - 1 - s) mod n; the partial it
  // receives in round s is the one it forwards in round s + 1.
  auto forwarded = [&](int s) { return ((r - 1 - s) % n + n) % n; };
  const size_t largest = *std::max_element(counts.begin(), counts.end()) * es;
  Scratch partials(2 * largest);
  char* buffers[2] = {partials.data(), partials.data() + largest};

  std::vector<transport::RequestPtr> current, previous;
  auto own = [&](int b) { return comm::until([ready, b] { return (*ready)[static_cast<size_t>(b)] != 0; }); };
  const int first = forwarded(0);
  if (ready) co_await own(first);
  for (Chunk c : Chunks(counts[first], chunk))
    current.push_back(g.isend(right, step, send + (off[first] + c.first) * es, c.count * es));
  for (int s = 0; s + 1 < n; ++s) {
    // Round s receives into the buffer that round s - 1's sends read from.
    co_await comm::all_of(std::move(previous));
    previous = std::move(current);
    current.clear();
    const int b = forwarded(s + 1);
    const bool last = s + 2 == n;  // then b == r: the result goes to out
    char* in = buffers[s % 2];
    std::vector<ExpectedReceive> receives;
    for (Chunk c : Chunks(counts[b], chunk))
      receives.push_back(post_receive(g, left, step, in + c.first * es, c.count * es));
    if (ready) co_await own(b);
    size_t i = 0;
    for (Chunk c : Chunks(counts[b], chunk)) {
      co_await received(collective, receives[i++]);
      char* partial = in + c.first * es;
      const char* own = send + (off[b] + c.first) * es;
      if (last) {
        kernels::reduce2(out + c.first * es, own, partial, c.count, dtype, op);
      } else {
        kernels::reduce2(partial, own, partial, c.count, dtype, op);
        current.push_back(g.isend(right, step, partial, c.count * es));
      }
    }
  }
  co_await comm::all_of(std::move(previous));
  co_await comm::all_of(std::move(current));
}

namespace {

// The blocks stay in place on the shared-memory path (no allocation per call); the other
// schedules take them as a vector.
comm::Task reduce_scatter_blocks(Group& g, Collective collective, const void* send, void* recv,
                                 Blocks counts, DType dtype, ReduceOp op) {
  check_reducible(collective_name(collective), dtype);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  Algorithm a = select_algorithm(collective, g, total * dtype_size(dtype), total, dtype);
  auto in = static_cast<const char*>(send);
  auto out = static_cast<char*>(recv);
  if (a == Algorithm::shm)
    return shm_reduce_scatter(g, collective_name(collective), in, out, std::move(counts), dtype,
                              op);
  std::vector<size_t> blocks(counts.begin(), counts.end());
  if (a == Algorithm::hierarchical)
    return hierarchical_reduce_scatter(g, collective_name(collective), in, out, std::move(blocks),
                                       dtype, op);
  return aborting_on_mismatch(g, a,
                              message_reduce_scatter(a, g, collective_name(collective), in, out,
                                                     std::move(blocks), dtype, op));
}

}  // namespace

comm::Task message_reduce_scatter(Algorithm a, Group& g, std::string_view collective,
                                  const char* send, char* out, std::vector<size_t> counts,
                                  DType dtype, ReduceOp op) {
  if (a == Algorithm::direct)
    return direct_reduce_scatter(g, collective, send, out, std::move(counts), dtype, op, 0);
  return ring_reduce_scatter(g, collective, send, out, std::move(counts), dtype, op, 0);
}

comm::Task reduce_scatter(Group& g, const void* send, void* recv, size_t recv_count, DType dtype,
                          ReduceOp op) {
  return reduce_scatter_blocks(g, Collective::reduce_scatter, send, recv,
                               Blocks(static_cast<size_t>(g.size()), recv_count), dtype, op);
}

comm::Task reduce_scatterv(Group& g, const void* send, void* recv, std::span<const size_t> counts,
                           DType dtype, ReduceOp op) {
  check_counts("reduce_scatterv", g.size(), counts);
  return reduce_scatter_blocks(g, Collective::reduce_scatterv, send, recv, Blocks(counts), dtype,
                               op);
}

}  // namespace seam::collectives
