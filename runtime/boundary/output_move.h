// Producer-side binding (§2.8): what an FFN exit does with its output rows — keep them, fold
// the update into a sliced residual and gather, reduce-scatter onto the residual's shard, take a
// CP shard back, or return over DP (the DP step is then chosen per batch by the exit).
#pragma once

#include "layouts/batch_facts.h"
#include "layouts/topology.h"
#include "runtime/boundary/contracts.h"
#include "runtime/boundary/steps.h"

namespace seam::boundary {

/// The producer's half of a resolved FFN stage's outgoing boundary: its output and the residual
/// while it ran (produced, residual), onto the rows it hands on (need) with the residual there
/// (residual_to).
EdgeDecl exit_edge(const ResolvedStage& stage);

/// The output move of an FFN's exit edge (exit_edge()) for variant v. NotSupportedError for an
/// update that cannot outlive its producer / cross a pipeline boundary, for an edge whose rows
/// handed on are not the residual's ("edge=..."), and for unsupported transitions ("produced=...
/// residual=... to=...").
OutputMove select_output_move(const Topology& topology, BatchVariant v, const EdgeDecl& exit);

}  // namespace seam::boundary
