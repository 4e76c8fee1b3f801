// Two-batch overlap (§3.6): how a layer's input rows are split between the two microbatches. The
// split always cuts attention rows, so an input on attention-TP slices is first written into the
// residual and gathered, then each half is sliced again.
#pragma once

#include <cstdint>

#include "layouts/batch_facts.h"
#include "layouts/topology.h"

namespace seam::boundary {

enum class TboSplitMove : uint8_t {
  KEEP,               ///< input on attention rows: split as is
  GATHER_THEN_SLICE,  ///< input on attention-TP slices: write the residual in, gather, slice each half
};

/// The split move for a layer whose input sits on `layer_input_rows` in variant v.
/// NotSupportedError("layer_input_rows=...") for any other rows.
TboSplitMove tbo_split_move(const Topology& topology, BatchVariant v, Layout layer_input_rows);

}  // namespace seam::boundary
