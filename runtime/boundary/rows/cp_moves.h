// Context-parallel row moves (§3.3) over the attention-CP group. Equal shards (DSA/MLA CP): a gather
// concatenates every CP rank's shard in rank order, the take-back copies this rank's shard out of
// the full-context rows, a reduce-scatter completes an attention-CP sum onto the shard. Uneven
// shards (GQA zig-zag CP): each shard is padded to the largest before the gather, and the take-back
// narrows rank r's block [r * max, r * max + rows[r]).
#pragma once

#include <cstdint>

#include <span>

#include "seam/tensor.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/rows/scratch.h"

namespace seam::boundary::rows {

/// full (cp * shard.rows rows) := every CP rank's shard in rank order.
void cp_gather(ProcessGroups& groups, const Tensor& shard, const Tensor& full);
/// shard := this CP rank's rows of `full`.
void cp_take_back(const ProcessGroups& groups, const Tensor& full, const Tensor& shard);
/// shard := this CP rank's rows of the attention-CP sum of `full`.
void cp_reduce_scatter(ProcessGroups& groups, const Tensor& full, const Tensor& shard);

/// Uneven shards: full (cp * max(rows) rows) := every rank's shard (rows[r] rows) padded to the max.
void cp_gather_padded(ProcessGroups& groups, const Tensor& shard, std::span<const int64_t> rows, const Tensor& full,
                      Scratch& scratch);
/// shard (rows[cp_rank] rows) := this rank's block of a padded gather's `full`.
void cp_take_back_padded(const ProcessGroups& groups, const Tensor& full, std::span<const int64_t> rows,
                         const Tensor& shard);

}  // namespace seam::boundary::rows
