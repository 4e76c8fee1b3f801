// all_gather_perf: every rank receives every rank's block of count / n elements, in rank order.
#include "tools/perf/perf_collective.h"
#include "tools/perf/shapes.h"

namespace seam::perf {
namespace {

const PerfCollective kAllGather{
    .name = "all_gather",
    .kind = collectives::Collective::all_gather,
    .reduces = false,
    .in_place = InPlace::send_inside_recv,
    .shape = [](size_t count, int n, int r) { return gather_shape(even_blocks(count, n), r); },
    .busbw_factor = ring_factor,
    .bound_bytes = gather_bound_bytes,
    .seam = [](comm::Communicator& c, const void* send, void* recv, const Shape& s, DType dtype,
               ReduceOp) { return c.all_gather(send, recv, s.send_count, dtype); },
    .mpi = [](const void* send, void* recv, const Shape& s, const MpiArgs& a) {
      MPI_Allgather(send, static_cast<int>(s.send_count), a.type, recv,
                    static_cast<int>(s.send_count), a.type, MPI_COMM_WORLD);
    },
    .expected = [](const Shape& s, int, int, size_t i, ReduceOp) { return gathered_value(s, i); },
};

}  // namespace
}  // namespace seam::perf

int main(int argc, char** argv) { return seam::perf::run_perf(argc, argv, seam::perf::kAllGather); }
