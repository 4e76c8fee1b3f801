// reduce_scatter_perf: rank r receives block r of the reduction of every rank's send (equal
// blocks of count / n elements).
#include "tools/perf/perf_collective.h"
#include "tools/perf/shapes.h"

namespace seam::perf {
namespace {

const PerfCollective kReduceScatter{
    .name = "reduce_scatter",
    .kind = collectives::Collective::reduce_scatter,
    .reduces = true,
    .in_place = InPlace::recv_inside_send,
    .shape = [](size_t count, int n, int r) { return scatter_shape(even_blocks(count, n), r); },
    .busbw_factor = ring_factor,
    .bound_bytes = scatter_bound_bytes,
    .seam = [](comm::Communicator& c, const void* send, void* recv, const Shape& s, DType dtype,
               ReduceOp op) { return c.reduce_scatter(send, recv, s.recv_count, dtype, op); },
    .mpi = [](const void* send, void* recv, const Shape& s, const MpiArgs& a) {
      MPI_Reduce_scatter_block(send, recv, static_cast<int>(s.recv_count), a.type, a.op,
                               MPI_COMM_WORLD);
    },
    .expected = [](const Shape& s, int rank, int n, size_t i, ReduceOp op) {
      return reduce_over_ranks(n, s.offsets[rank] + i, op);
    },
};

}  // namespace
}  // namespace seam::perf

int main(int argc, char** argv) {
  return seam::perf::run_perf(argc, argv, seam::perf::kReduceScatter);
}
