#include "runtime/collectives/blocks.h"

#include <algorithm>

#include "layouts/config.h"

namespace seam::collectives {

namespace {
// Large enough that per-message overhead is small, small enough that a chunk being reduced
// stays in L2 while the next one arrives.
constexpr size_t kDefaultChunkBytes = 256 * 1024;
}  // namespace

Blocks block_offsets(std::span<const size_t> counts) {
  Blocks offsets(counts.size() + 1, 0);
  for (size_t r = 0; r < counts.size(); ++r) offsets[r + 1] = offsets[r] + counts[r];
  return offsets;
}

Blocks even_blocks(size_t count, int n) {
  Blocks blocks(static_cast<size_t>(n), count / n);
  for (size_t r = 0; r < count % n; ++r) ++blocks[r];
  return blocks;
}

size_t chunk_elements(size_t element_bytes) {
  size_t bytes = Config::get().chunk_bytes ? Config::get().chunk_bytes : kDefaultChunkBytes;
  return std::max<size_t>(1, bytes / element_bytes);
}

}  // namespace seam::collectives
