#include <cstdint>
#include "tools/sim/token_rows.h"

#include <algorithm>
#include <numeric>
#include <span>
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
  // Uneven CP shards (GQA CP): rank r holds shards[r] rows of its replica, in rank order. Gathered
  // over CP alone (no DP), each shard is padded to the longest; a DP x CP gather places them back
  // to back in the replica's slot instead.
  const std::span<const int64_t> shards = facts.cp_shard_rows();
  const bool uneven = !shards.empty() && facts.variant() == BatchVariant::CONTEXT_PARALLEL;
  if (uneven && layout.has(TokenAxis::ATTN_CP)) {
    const int64_t first = std::accumulate(shards.begin(), shards.begin() + at.cp, int64_t{0});
    ids = std::vector<int64_t>(ids.begin() + first, ids.begin() + first + shards[static_cast<size_t>(at.cp)]);
  } else if (uneven && facts.dp_size() == 1) {
    const int64_t block = *std::max_element(shards.begin(), shards.end());
    std::vector<int64_t> padded;
    int64_t first = 0;
    for (int64_t n : shards) {
      padded.insert(padded.end(), ids.begin() + first, ids.begin() + first + n);
      padded.insert(padded.end(), static_cast<size_t>(block - n), -1);
      first += n;
    }
    ids = std::move(padded);
  } else if (layout.has(TokenAxis::ATTN_CP)) {
    keep_part(at.cp, topology.attn_cp);
  }
  if (layout.has(TokenAxis::ATTN_TP_SCATTER)) keep_part(at.tp, topology.attn_tp);
  return ids;
}

}  // namespace seam::sim
