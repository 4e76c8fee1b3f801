#include "kernels/reduce/reduce.h"
#include "runtime/collectives/blocks.h"
#include "runtime/collectives/collectives.h"
#include "runtime/collectives/receive.h"
#include "runtime/collectives/schedules.h"
#include "runtime/collectives/scratch.h"
#include "runtime/collectives/selection.h"
#include "runtime/collectives/validate.h"

namespace seam::collectives {
namespace {

constexpr std::string_view kName = "all_reduce";

}  // namespace

comm::Task direct_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                             ReduceOp op) {
  const int n = g.size(), r = g.rank();
  const size_t bytes = count * dtype_size(dtype);
  Scratch staging((n - 1) * bytes);
  Sources sources(n);
  std::vector<ExpectedReceive> receives;
  for (int p = 0; p < n; ++p) {
    if (p == r) {
      sources[p] = send;
      continue;
    }
    char* slot = staging.data() + (p < r ? p : p - 1) * bytes;
    sources[p] = slot;
    receives.push_back(post_receive(g, p, 0, slot, bytes));  // empty too: see Chunks
  }
  std::vector<transport::RequestPtr> sends;
  for (int p = 0; p < n; ++p)
    if (p != r) sends.push_back(g.isend(p, 0, send, bytes));
  co_await received(kName, std::move(receives));
  // In place, recv is what the sends read: they must be done before it is overwritten.
  if (send == recv) co_await comm::all_of(std::move(sends));
  kernels::reduce(recv, sources, count, dtype, op);
  co_await comm::all_of(std::move(sends));
}

comm::Task ring_all_reduce(Group& g, const char* send, char* recv, size_t count, DType dtype,
                           ReduceOp op) {
  const auto even = even_blocks(count, g.size());
  const std::vector<size_t> blocks(even.begin(), even.end());
  char* mine = recv + block_offsets(blocks)[g.rank()] * dtype_size(dtype);
  comm::Task reduce = ring_reduce_scatter(g, kName, send, mine, blocks, dtype, op, 0);
  co_await comm::run(reduce);
  comm::Task gather = ring_all_gather(g, kName, mine, recv, blocks, dtype, 1);
  co_await comm::run(gather);
}

comm::Task message_all_reduce(Algorithm a, Group& g, const char* send, char* recv, size_t count,
                              DType dtype, ReduceOp op) {
  if (a == Algorithm::direct) return direct_all_reduce(g, send, recv, count, dtype, op);
  if (a == Algorithm::halving) return halving_all_reduce(g, send, recv, count, dtype, op);
  return ring_all_reduce(g, send, recv, count, dtype, op);
}

comm::Task all_reduce(Group& g, const void* send, void* recv, size_t count, DType dtype,
                      ReduceOp op) {
  check_reducible(kName, dtype);
  Algorithm a = select_algorithm(Collective::all_reduce, g, count * dtype_size(dtype), count, dtype);
  auto in = static_cast<const char*>(send);
  auto out = static_cast<char*>(recv);
  if (a == Algorithm::shm) return shm_all_reduce(g, in, out, count, dtype, op);
  if (a == Algorithm::hierarchical) return hierarchical_all_reduce(g, in, out, count, dtype, op);
  return aborting_on_mismatch(g, a, message_all_reduce(a, g, in, out, count, dtype, op));
}

}  // namespace seam::collectives
