// all_gatherv_perf: all-gather of uneven blocks: rank r contributes (r + 1) shares of the count
// split into 1 + 2 + ... + n shares (see proportional_blocks); the size column is the whole
// receive buffer (all ranks' blocks).
#include "tools/perf/perf_collective.h"
#include "tools/perf/shapes.h"

namespace seam::perf {
namespace {

const PerfCollective kAllGatherv{
    .name = "all_gatherv",
    .kind = collectives::Collective::all_gatherv,
    .reduces = false,
    .in_place = InPlace::send_inside_recv,
    .shape = [](size_t count, int n, int r) { return gather_shape(proportional_blocks(count, n), r); },
    .busbw_factor = ring_factor,
    .bound_bytes = gather_bound_bytes,
    .seam = [](comm::Communicator& c, const void* send, void* recv, const Shape& s, DType dtype,
               ReduceOp) { return c.all_gatherv(send, recv, s.blocks, dtype); },
    .mpi = [](const void* send, void* recv, const Shape& s, const MpiArgs& a) {
      auto counts = mpi_counts(s);
      auto displacements = mpi_displacements(s);
      MPI_Allgatherv(send, static_cast<int>(s.send_count), a.type, recv, counts.data(),
                     displacements.data(), a.type, MPI_COMM_WORLD);
    },
    .expected = [](const Shape& s, int, int, size_t i, ReduceOp) { return gathered_value(s, i); },
};

}  // namespace
}  // namespace seam::perf

int main(int argc, char** argv) { return seam::perf::run_perf(argc, argv, seam::perf::kAllGatherv); }
