#include "runtime/boundary/rows/traffic.h"

namespace seam::boundary::rows {

std::string_view group_kind_name(GroupKind group) {
  switch (group) {
    case GroupKind::ATTN_TP: return "ATTN_TP";
    case GroupKind::ATTN_DP: return "ATTN_DP";
    case GroupKind::ATTN_CP: return "ATTN_CP";
    case GroupKind::TP: return "TP";
    case GroupKind::MOE_OUTPUT: return "MOE_OUTPUT";
    case GroupKind::WORLD: return "WORLD";
  }
  return "?";
}

std::string_view collective_kind_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::reduce_scatterv: return "reduce_scatterv";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::send: return "send";
    case CollectiveKind::recv: return "recv";
    case CollectiveKind::fused_all_reduce_norm: return "fused_all_reduce_norm";
    case CollectiveKind::all_gatherv: return "all_gatherv";
  }
  return "?";
}

Traffic::Count Traffic::total() const {
  Count t;
  for (const auto& per_group : counts_)
    for (const Count& c : per_group) {
      t.calls += c.calls;
      t.bytes += c.bytes;
    }
  return t;
}

std::vector<std::string> Traffic::describe() const {
  std::vector<std::string> lines;
  for (int g = 0; g < kGroupKindCount; ++g)
    for (int k = 0; k < kCollectiveKindCount; ++k) {
      const Count& c = counts_[g][k];
      if (c.calls == 0) continue;
      lines.push_back(std::string(group_kind_name(static_cast<GroupKind>(g))) + " " +
                      std::string(collective_kind_name(static_cast<CollectiveKind>(k))) + ": " +
                      std::to_string(c.calls) + " calls, " + std::to_string(c.bytes) + " bytes");
    }
  return lines;
}

}  // namespace seam::boundary::rows
