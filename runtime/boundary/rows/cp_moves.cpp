#include <cstdint>
#include "runtime/boundary/rows/cp_moves.h"

#include <algorithm>
#include <string>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/boundary/rows/tp_moves.h"

namespace seam::boundary::rows {

namespace {
int64_t max_rows(const ProcessGroups& groups, std::span<const int64_t> rows) {
  if (static_cast<int>(rows.size()) != groups.size(GroupKind::ATTN_CP))
    throw ValueError("row move: a CP move needs one shard row count per attention-CP rank");
  return rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end());
}
}  // namespace

void cp_gather(ProcessGroups& groups, const Tensor& shard, const Tensor& full) {
  all_gather(groups, GroupKind::ATTN_CP, shard, full).wait();
}

void cp_take_back(const ProcessGroups& groups, const Tensor& full, const Tensor& shard) {
  kernels::copy(token_slice(groups, GroupKind::ATTN_CP, full), shard);
}

void cp_reduce_scatter(ProcessGroups& groups, const Tensor& full, const Tensor& shard) {
  reduce_scatter(groups, GroupKind::ATTN_CP, full, shard).wait();
}

void cp_gather_padded(ProcessGroups& groups, const Tensor& shard, std::span<const int64_t> rows, const Tensor& full,
                      Scratch& scratch) {
  const int64_t max = max_rows(groups, rows);
  if (shard.rows != rows[static_cast<size_t>(groups.rank_in(GroupKind::ATTN_CP))])
    throw ValueError("row move: the CP shard does not have this rank's row count");
  const Tensor padded = scratch.get(shard, max);
  if (shard.rows > 0) kernels::copy(shard, padded.slice_rows(0, shard.rows));
  kernels::zero(padded.slice_rows(shard.rows, max - shard.rows));
  all_gather(groups, GroupKind::ATTN_CP, padded, full).wait();
}

void cp_take_back_padded(const ProcessGroups& groups, const Tensor& full, std::span<const int64_t> rows,
                         const Tensor& shard) {
  const int64_t max = max_rows(groups, rows);
  const int r = groups.rank_in(GroupKind::ATTN_CP);
  if (shard.rows != rows[static_cast<size_t>(r)])
    throw ValueError("row move: the CP shard does not have this rank's row count");
  if (full.rows != max * groups.size(GroupKind::ATTN_CP))
    throw ValueError("row move: a padded CP take-back needs " + std::to_string(max * groups.size(GroupKind::ATTN_CP)) +
                     " full-context rows (the longest shard per CP rank), got " + std::to_string(full.rows));
  if (shard.rows > 0) kernels::copy(full.slice_rows(r * max, shard.rows), shard);
}

}  // namespace seam::boundary::rows
