// Producer-side binding (§2.8): what an FFN exit does with its output rows — keep them, fold
// the update into a sliced residual and gather, reduce-scatter onto the residual's shard, take a
// CP shard back, or return over DP (the DP step is then chosen per batch by the exit).
#pragma once

#include "layouts/batch_facts.h"
#include "layouts/topology.h"
#include "runtime/boundary/contracts.h"
#include "runtime/boundary/steps.h"

namespace seam::boundary {

/// The output move of a resolved FFN stage for variant v. NotSupportedError for unsupported
/// transitions or an update that cannot outlive its producer / cross a pipeline boundary.
OutputMove select_output_move(const Topology& topology, BatchVariant v, const ResolvedStage& stage);

}  // namespace seam::boundary
