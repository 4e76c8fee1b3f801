#include "runtime/boundary/rows/process_groups.h"

#include <algorithm>
#include <string>

#include "seam/errors.h"

namespace seam::boundary::rows {

GroupKind group_of(SumGroup group) {
  switch (group) {
    case SumGroup::ATTN_TP: return GroupKind::ATTN_TP;
    case SumGroup::ATTN_CP: return GroupKind::ATTN_CP;
    case SumGroup::TP: return GroupKind::TP;
    case SumGroup::MOE_OUTPUT: return GroupKind::MOE_OUTPUT;
  }
  throw ValueError("unsupported output sum group: " + std::string(sum_group_name(group)));
}

ProcessGroups::ProcessGroups(std::shared_ptr<comm::Communicator> world, const Topology& topology)
    : topology_(topology), world_(std::move(world)) {
  topology_.validate();
  if (world_->size() != topology_.tp * topology_.pp)
    throw ValueError("the world holds " + std::to_string(world_->size()) + " ranks, the topology needs tp * pp = " +
                     std::to_string(topology_.tp * topology_.pp));
  pp_rank_ = world_->rank() / topology_.tp;
  tp_rank_ = world_->rank() % topology_.tp;
  attn_ = topology_.attn_coords(tp_rank_);
  // Every rank builds the groups in the same order: each is one split of the world.
  build(GroupKind::ATTN_TP, topology_.attn_tp_ranks(tp_rank_));
  build(GroupKind::ATTN_DP, topology_.attn_dp_ranks(tp_rank_));
  build(GroupKind::ATTN_CP, topology_.attn_cp_ranks(tp_rank_));
  build(GroupKind::TP, topology_.tp_ranks());
  build(GroupKind::MOE_OUTPUT, topology_.sum_group_ranks(SumGroup::MOE_OUTPUT, tp_rank_));
  comms_[static_cast<size_t>(GroupKind::WORLD)] = world_->size() > 1 ? world_ : nullptr;
  sizes_[static_cast<size_t>(GroupKind::WORLD)] = world_->size();
  ranks_[static_cast<size_t>(GroupKind::WORLD)] = world_->rank();
}

ProcessGroups::ProcessGroups(const Topology& topology) : topology_(topology) {
  topology_.validate();
  if (topology_.tp != 1 || topology_.pp != 1)
    throw ValueError("a single-rank world needs tp = pp = 1: " + topology_.describe());
  sizes_.fill(1);
}

void ProcessGroups::build(GroupKind kind, const std::vector<int>& tp_ranks) {
  const auto me = std::find(tp_ranks.begin(), tp_ranks.end(), tp_rank_);
  if (me == tp_ranks.end()) throw ValueError("rank layout error: rank not in its own " + std::string(group_kind_name(kind)) + " group");
  // The group's color is the world rank of its first member: groups of one kind are disjoint.
  const int color = topology_.world_rank(pp_rank_, *std::min_element(tp_ranks.begin(), tp_ranks.end()));
  const int key = static_cast<int>(me - tp_ranks.begin());
  auto comm = world_->split(color, key);
  const size_t k = static_cast<size_t>(kind);
  sizes_[k] = static_cast<int>(tp_ranks.size());
  ranks_[k] = key;
  comms_[k] = sizes_[k] > 1 ? comm : nullptr;
}

}  // namespace seam::boundary::rows
