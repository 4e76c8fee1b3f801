// broadcast_perf: rank 0's count elements to every rank. Out of place the root sends from its
// send buffer and the others receive into theirs (as MPI_Bcast does with one buffer per rank);
// in place every rank passes one buffer.
#include "tools/perf/perf_collective.h"

namespace seam::perf {
namespace {

const PerfCollective kBroadcast{
    .name = "broadcast",
    .kind = collectives::Collective::broadcast,
    .reduces = false,
    .in_place = InPlace::root_sends,
    .shape =
        [](size_t count, int, int) {
          Shape s;
          s.send_count = s.recv_count = count;
          return s;
        },
    .busbw_factor = [](int) { return 1.0; },
    // The root reads the buffer once, every other rank writes it once.
    .bound_bytes = [](double size, int n) { return n * size; },
    .seam = [](comm::Communicator& c, const void* send, void* recv, const Shape& s, DType dtype,
               ReduceOp) {
      return c.broadcast(c.rank() == 0 ? const_cast<void*>(send) : recv, s.recv_count, dtype, 0);
    },
    .mpi = [](const void* send, void* recv, const Shape& s, const MpiArgs& a) {
      int rank = 0;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      MPI_Bcast(rank == 0 ? const_cast<void*>(send) : recv, static_cast<int>(s.recv_count), a.type, 0,
                MPI_COMM_WORLD);
    },
    .expected = [](const Shape&, int, int, size_t i, ReduceOp) { return input_value(0, i); },
};

}  // namespace
}  // namespace seam::perf

int main(int argc, char** argv) { return seam::perf::run_perf(argc, argv, seam::perf::kBroadcast); }
