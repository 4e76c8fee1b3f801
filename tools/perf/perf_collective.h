// What a perf binary says about its collective (one small file per collective fills this in);
// the shared driver (perf_driver.cpp) does the rest, as in nccl-tests.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "seam/dtype.h"
#include "runtime/collectives/selection.h"
#include "seam/communicator.h"

namespace seam::perf {

/// One rank's buffers for one row. blocks/offsets: every rank's block, in elements (for the
/// reduce-scatter and all-gather families; all_reduce leaves them empty).
struct Shape {
  size_t send_count = 0;
  size_t recv_count = 0;
  std::vector<size_t> blocks;
  std::vector<size_t> offsets;  // blocks.size() + 1 entries
};

/// Where an in-place call's two buffers are (NCCL's conventions).
enum class InPlace {
  same_buffer,       ///< all_reduce: send == recv
  recv_inside_send,  ///< reduce-scatter: recv = send + offsets[rank]
  send_inside_recv,  ///< all-gather: send = recv + offsets[rank]
  root_sends,        ///< broadcast: one buffer per rank; out of place the root's is its send
};

/// The MPI datatype and op for the row's dtype and op.
struct MpiArgs {
  MPI_Datatype type;
  MPI_Op op;
};

struct PerfCollective {
  std::string_view name;  ///< "all_reduce"
  collectives::Collective kind;
  bool reduces;
  InPlace in_place;
  /// This rank's shape for `count` elements in all (the size column over the dtype size).
  std::function<Shape(size_t count, int ranks, int rank)> shape;
  /// nccl-tests' busbw / algbw.
  double (*busbw_factor)(int ranks);
  /// Bytes all ranks together must at least read and write for a `size`-byte row: the
  /// memory-bandwidth bound is this over the measured copy bandwidth.
  double (*bound_bytes)(double size, int ranks);
  comm::Work (*seam)(comm::Communicator& c, const void* send, void* recv, const Shape& s,
                     DType dtype, ReduceOp op);
  /// The MPI library's own call on the same buffers (out-of-place).
  void (*mpi)(const void* send, void* recv, const Shape& s, const MpiArgs& args);
  /// Element i of `rank`'s result when rank p's send element j is input_value(p, j).
  double (*expected)(const Shape& s, int rank, int ranks, size_t i, ReduceOp op);
};

/// Rank p's send element j: small integers, so every sum is exact in every dtype.
double input_value(int rank, size_t j);
/// op over all ranks' element j.
double reduce_over_ranks(int ranks, size_t j, ReduceOp op);

/// Where one rank's calls of a row point, given its three buffers (host or device): send, recv,
/// and the one buffer of the in-place call, by the conventions of InPlace.
struct RowPointers {
  const PerfCollective& c;
  const Shape& s;
  int rank;
  size_t es;  ///< bytes per element
  char* send;
  char* recv;
  char* shared;

  const void* send_of(bool in_place) const;
  void* recv_of(bool in_place) const;
  /// Where this rank's input goes in the in-place buffer.
  char* in_place_input() const;
};

/// Elements of `rank`'s result (s.recv_count of them) that are not c.expected.
double count_wrong(const PerfCollective& c, const Shape& s, int rank, int ranks,
                   const void* result, DType dtype, ReduceOp op);

/// Runs the nccl-tests style table for `c`; returns the process exit code.
int run_perf(int argc, char** argv, const PerfCollective& c);

}  // namespace seam::perf
