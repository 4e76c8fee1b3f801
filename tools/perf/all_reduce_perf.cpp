// all_reduce_perf: recv = op over ranks of send, count elements on every rank.
#include "tools/perf/perf_collective.h"

namespace seam::perf {
namespace {

const PerfCollective kAllReduce{
    .name = "all_reduce",
    .kind = collectives::Collective::all_reduce,
    .reduces = true,
    .in_place = InPlace::same_buffer,
    .shape = [](size_t count, int, int) { return Shape{count, count, {}, {}}; },
    .busbw_factor = [](int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; },
    // Every rank reads its input and writes the result.
    .bound_bytes = [](double size, int n) { return 2.0 * n * size; },
    .seam = [](comm::Communicator& c, const void* send, void* recv, const Shape& s, DType dtype,
               ReduceOp op) { return c.all_reduce(send, recv, s.recv_count, dtype, op); },
    .mpi = [](const void* send, void* recv, const Shape& s, const MpiArgs& a) {
      MPI_Allreduce(send, recv, static_cast<int>(s.recv_count), a.type, a.op, MPI_COMM_WORLD);
    },
    .expected = [](const Shape&, int, int n, size_t i, ReduceOp op) {
      return reduce_over_ranks(n, i, op);
    },
};

}  // namespace
}  // namespace seam::perf

int main(int argc, char** argv) { return seam::perf::run_perf(argc, argv, seam::perf::kAllReduce); }
