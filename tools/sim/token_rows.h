// Which global token each row of a stage's rows holds, from the batch facts and the rows' layout —
// what an engine's batch metadata says. A batch's ReplicaRows name the token of every padded row of
// every attention-DP replica: for a whole batch, replica d's real tokens are the global tokens
// [first(d), first(d) + tokens(d)) and its padding rows (after them) hold no token (-1); a
// two-batch-overlap microbatch holds the parent's rows its split gave it. A replica's rows split
// into equal contiguous CP shards (ATTN_CP), then attention-TP slices (ATTN_TP_SCATTER).
#pragma once

#include <cstdint>
#include <vector>

#include "layouts/batch_facts.h"
#include "layouts/layout.h"
#include "layouts/topology.h"

namespace seam::sim {

/// The global token of each padded row of each replica ([dp][row]; -1: padding).
using ReplicaRows = std::vector<std::vector<int64_t>>;

/// A whole batch's rows: replica d's real tokens first, numbered on from the replicas before it,
/// then padding.
ReplicaRows replica_rows(const BatchFacts& facts);
/// Token ids of rows laid out as `layout` on the rank at `at`: its replica's rows (ATTN_DP) or the
/// global DP buffer, cut to its CP shard (ATTN_CP) and its attention-TP slice (ATTN_TP_SCATTER).
std::vector<int64_t> token_ids(const BatchFacts& facts, const ReplicaRows& rows, Layout layout,
                               const Topology& topology, const Topology::AttnCoords& at);

}  // namespace seam::sim
