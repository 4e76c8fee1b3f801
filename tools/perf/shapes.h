// Buffer shapes shared by the perf binaries: even blocks (nccl-tests: the count rounded down to
// a multiple of the rank count) and the v-variants' uneven blocks.
#pragma once

#include "tools/perf/perf_collective.h"

namespace seam::perf {

/// Rank r's block is (r + 1) / (1 + 2 + ... + n) of count (rank n-1 also takes the
/// remainder): 1:2 at two ranks, 1:2:3:4 at four.
std::vector<size_t> proportional_blocks(size_t count, int ranks);
/// count / ranks elements each (the remainder is dropped, as nccl-tests does).
std::vector<size_t> even_blocks(size_t count, int ranks);

/// Reduce-scatter family: send holds every block, recv this rank's.
Shape scatter_shape(std::vector<size_t> blocks, int rank);
/// All-gather family: send holds this rank's block, recv every block.
Shape gather_shape(std::vector<size_t> blocks, int rank);

/// Element i of an all-gather's result: element i - offsets[p] of the send of the rank p
/// whose block holds i.
double gathered_value(const Shape& s, size_t i);

/// Bytes bounds: reduce-scatter reads all n sends and writes one share; all-gather reads
/// n shares and writes n copies of everything.
double scatter_bound_bytes(double size, int ranks);
double gather_bound_bytes(double size, int ranks);
/// nccl-tests' (n - 1) / n.
double ring_factor(int ranks);

/// MPI counts and displacements (ints) of blocks.
std::vector<int> mpi_counts(const Shape& s);
std::vector<int> mpi_displacements(const Shape& s);

}  // namespace seam::perf
