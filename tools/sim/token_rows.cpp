#include <cstdint>
#include "tools/sim/token_rows.h"

#include <stdexcept>

namespace seam::sim {

ReplicaRows replica_rows(const BatchFacts& facts) {
  ReplicaRows rows(static_cast<size_t>(facts.dp_size()));
  int64_t first = 0;  // the global id of replica dp's first token
  for (int dp = 0; dp < facts.dp_size(); first += facts.tokens(dp), ++dp)
    for (int64_t i = 0; i < facts.rows(dp); ++i)
      rows[static_cast<size_t>(dp)].push_back(i < facts.tokens(dp) ? first + i : -1);
  return rows;
}

std::vector<int64_t> token_ids(const BatchFacts& facts, const ReplicaRows& rows, Layout layout,
                               const Topology& topology, const Topology::AttnCoords& at) {
  if (static_cast<int>(rows.size()) != facts.dp_size()) throw std::logic_error("token rows for another batch's replicas");
  std::vector<int64_t> ids;
  auto append_replica = [&](int dp) {
    const std::vector<int64_t>& r = rows[static_cast<size_t>(dp)];
    if (static_cast<int64_t>(r.size()) != facts.rows(dp)) throw std::logic_error("token rows for another batch's rows");
    ids.insert(ids.end(), r.begin(), r.end());
  };
  if (layout.has(TokenAxis::ATTN_DP) || facts.dp_size() == 1) {
    append_replica(facts.dp_rank());
  } else {
    for (int dp = 0; dp < facts.dp_size(); ++dp) append_replica(dp);
  }
  auto keep_part = [&](int index, int count) {
    const auto per_part = static_cast<int64_t>(ids.size()) / count;
    ids = std::vector<int64_t>(ids.begin() + per_part * index, ids.begin() + per_part * (index + 1));
  };
  if (layout.has(TokenAxis::ATTN_CP)) keep_part(at.cp, topology.attn_cp);
  if (layout.has(TokenAxis::ATTN_TP_SCATTER)) keep_part(at.tp, topology.attn_tp);
  return ids;
}

}  // namespace seam::sim
