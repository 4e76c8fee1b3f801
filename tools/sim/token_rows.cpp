#include "tools/sim/token_rows.h"

namespace seam::sim {

int64_t first_token(const BatchFacts& facts, int dp) {
  int64_t first = 0;
  for (int d = 0; d < dp; ++d) first += facts.tokens(d);
  return first;
}

std::vector<int64_t> token_ids(const BatchFacts& facts, Layout layout, int attn_tp_rank, int attn_tp) {
  std::vector<int64_t> ids;
  auto append_replica = [&](int dp) {
    for (int64_t i = 0; i < facts.rows(dp); ++i) ids.push_back(i < facts.tokens(dp) ? first_token(facts, dp) + i : -1);
  };
  if (layout.has(TokenAxis::ATTN_DP) || facts.dp_size() == 1) {
    append_replica(facts.dp_rank());
  } else {
    for (int dp = 0; dp < facts.dp_size(); ++dp) append_replica(dp);
  }
  if (layout.has(TokenAxis::ATTN_TP_SCATTER)) {
    const auto per_rank = static_cast<int64_t>(ids.size()) / attn_tp;
    ids = std::vector<int64_t>(ids.begin() + per_rank * attn_tp_rank, ids.begin() + per_rank * (attn_tp_rank + 1));
  }
  return ids;
}

}  // namespace seam::sim
