#include "tools/perf/shapes.h"

namespace seam::perf {

std::vector<size_t> proportional_blocks(size_t count, int ranks) {
  const size_t parts = static_cast<size_t>(ranks) * (ranks + 1) / 2;
  std::vector<size_t> blocks(ranks);
  size_t given = 0;
  for (int r = 0; r < ranks; ++r) {
    blocks[r] = count / parts * (r + 1);
    given += blocks[r];
  }
  blocks.back() += count - given;
  return blocks;
}

std::vector<size_t> even_blocks(size_t count, int ranks) {
  return std::vector<size_t>(ranks, count / ranks);
}

namespace {
std::vector<size_t> offsets_of(const std::vector<size_t>& blocks) {
  std::vector<size_t> off(blocks.size() + 1, 0);
  for (size_t r = 0; r < blocks.size(); ++r) off[r + 1] = off[r] + blocks[r];
  return off;
}
}  // namespace

Shape scatter_shape(std::vector<size_t> blocks, int rank) {
  Shape s;
  s.offsets = offsets_of(blocks);
  s.send_count = s.offsets.back();
  s.recv_count = blocks[rank];
  s.blocks = std::move(blocks);
  return s;
}

Shape gather_shape(std::vector<size_t> blocks, int rank) {
  Shape s = scatter_shape(std::move(blocks), rank);
  std::swap(s.send_count, s.recv_count);
  return s;
}

double gathered_value(const Shape& s, size_t i) {
  size_t p = 0;
  while (i >= s.offsets[p + 1]) ++p;
  return input_value(static_cast<int>(p), i - s.offsets[p]);
}

double scatter_bound_bytes(double size, int ranks) { return ranks * size + size; }
double gather_bound_bytes(double size, int ranks) { return size + ranks * size; }
double ring_factor(int ranks) { return ranks > 1 ? (ranks - 1.0) / ranks : 0.0; }

std::vector<int> mpi_counts(const Shape& s) { return {s.blocks.begin(), s.blocks.end()}; }
std::vector<int> mpi_displacements(const Shape& s) {
  return {s.offsets.begin(), s.offsets.end() - 1};
}

}  // namespace seam::perf
