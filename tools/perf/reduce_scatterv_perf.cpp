// reduce_scatterv_perf: reduce-scatter with uneven blocks: rank r receives (r + 1) shares of
// the count split into 1 + 2 + ... + n shares (see proportional_blocks); the size column is the
// whole send buffer (all ranks' blocks), as for reduce_scatter.
#include "tools/perf/perf_collective.h"
#include "tools/perf/shapes.h"

namespace seam::perf {
namespace {

const PerfCollective kReduceScatterv{
    .name = "reduce_scatterv",
    .kind = collectives::Collective::reduce_scatterv,
    .reduces = true,
    .in_place = InPlace::recv_inside_send,
    .shape = [](size_t count, int n, int r) { return scatter_shape(proportional_blocks(count, n), r); },
    .busbw_factor = ring_factor,
    .bound_bytes = scatter_bound_bytes,
    .seam = [](comm::Communicator& c, const void* send, void* recv, const Shape& s, DType dtype,
               ReduceOp op) { return c.reduce_scatterv(send, recv, s.blocks, dtype, op); },
    .mpi = [](const void* send, void* recv, const Shape& s, const MpiArgs& a) {
      auto counts = mpi_counts(s);
      MPI_Reduce_scatter(send, recv, counts.data(), a.type, a.op, MPI_COMM_WORLD);
    },
    .expected = [](const Shape& s, int rank, int n, size_t i, ReduceOp op) {
      return reduce_over_ranks(n, s.offsets[rank] + i, op);
    },
};

}  // namespace
}  // namespace seam::perf

int main(int argc, char** argv) {
  return seam::perf::run_perf(argc, argv, seam::perf::kReduceScatterv);
}
