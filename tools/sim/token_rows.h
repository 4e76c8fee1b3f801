// Which global token each row of a stage's rows holds, from the batch facts and the rows' layout —
// what an engine's batch metadata says. Replica d's real tokens are the global tokens
// [first(d), first(d) + tokens(d)); padding rows (after them) hold no token (-1).
#pragma once

#include <cstdint>
#include <vector>

#include "layouts/batch_facts.h"
#include "layouts/layout.h"

namespace seam::sim {

/// The global id of replica `dp`'s first token.
int64_t first_token(const BatchFacts& facts, int dp);
/// Token ids of rows laid out as `layout`: this replica's rows (ATTN_DP), cut to this attention-TP
/// rank's slice (ATTN_TP_SCATTER), or the global DP buffer (neither).
std::vector<int64_t> token_ids(const BatchFacts& facts, Layout layout, int attn_tp_rank, int attn_tp);

}  // namespace seam::sim
