// How a collective's buffer splits into per-rank blocks, in elements.
#pragma once

#include <cstddef>
#include <span>

#include "runtime/collectives/inline_vector.h"

namespace seam::collectives {

/// Per-rank element counts or offsets: in place up to 16 ranks (and the total), else on the heap.
using Blocks = InlineVector<size_t, 17>;

/// The buffers a reduction folds, one per rank: in place up to 16 ranks.
using Sources = InlineVector<const void*, 16>;

/// offsets[r] = counts[0] + ... + counts[r-1]; offsets[n] is the total.
Blocks block_offsets(std::span<const size_t> counts);
/// count split into n blocks in rank order, as even as possible (the first count % n get one
/// more element): the blocks all-reduce reduces and gathers.
Blocks even_blocks(size_t count, int n);
/// Elements per pipeline chunk for this dtype: SEAM_CHUNK_BYTES (or the built-in default)
/// rounded down to whole elements, at least one.
size_t chunk_elements(size_t element_bytes);

}  // namespace seam::collectives
