// Which global token each row of a stage's rows holds, from the batch facts and the rows' layout —
// what an engine's batch metadata says. Replica d's real tokens are the global tokens
// [first(d), first(d) + tokens(d)); padding rows (after them) hold no token (-1). A replica's
// rows split into equal contiguous CP shards (ATTN_CP), then attention-TP slices (ATTN_TP_SCATTER).
#pragma once

#include <cstdint>
#include <vector>

#include "layouts/batch_facts.h"
#include "layouts/layout.h"
#include "layouts/topology.h"

namespace seam::sim {

/// The global id of replica `dp`'s first token.
int64_t first_token(const BatchFacts& facts, int dp);
/// Token ids of rows laid out as `layout` on the rank at `at`: its replica's rows (ATTN_DP) or the
/// global DP buffer, cut to its CP shard (ATTN_CP) and its attention-TP slice (ATTN_TP_SCATTER).
std::vector<int64_t> token_ids(const BatchFacts& facts, Layout layout, const Topology& topology,
                               const Topology::AttnCoords& at);

}  // namespace seam::sim
