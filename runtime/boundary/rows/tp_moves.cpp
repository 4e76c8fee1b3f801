#include <cstdint>
#include "runtime/boundary/rows/tp_moves.h"

#include <string>

#include "seam/errors.h"
#include "runtime/boundary/rows/tensor_collectives.h"

namespace seam::boundary::rows {

Tensor token_slice(const ProcessGroups& groups, GroupKind group, const Tensor& rows) {
  const int n = groups.size(group);
  if (rows.rows % n != 0) {
    if (group == GroupKind::TP)
      throw ValueError("Expected total tokens " + std::to_string(rows.rows) + " % tp_size " + std::to_string(n) +
                       " to be 0");
    throw ValueError("row move: " + std::to_string(rows.rows) + " rows do not split over " + std::to_string(n) + " " +
                     std::string(group_kind_name(group)) + " ranks");
  }
  const int64_t per_rank = rows.rows / n;
  return rows.slice_rows(per_rank * groups.rank_in(group), per_rank);
}

comm::Work attn_tp_gather(ProcessGroups& groups, const Tensor& slice, const Tensor& dst) {
  return all_gather(groups, GroupKind::ATTN_TP, slice, dst);
}

comm::Work attn_tp_reduce_scatter(ProcessGroups& groups, const Tensor& partial, const Tensor& dst) {
  return reduce_scatter(groups, GroupKind::ATTN_TP, partial, dst);
}

comm::Work tp_reduce_scatter(ProcessGroups& groups, const Tensor& partial, const Tensor& dst) {
  token_slice(groups, GroupKind::TP, partial);  // the reference's divisibility assertion
  return reduce_scatter(groups, GroupKind::TP, partial, dst);
}

comm::Work tp_gather(ProcessGroups& groups, const Tensor& slice, const Tensor& dst) {
  return all_gather(groups, GroupKind::TP, slice, dst);
}

}  // namespace seam::boundary::rows
