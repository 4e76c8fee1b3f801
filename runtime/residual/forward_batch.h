// ForwardBatch: what one forward of the layer stack carries from boundary to boundary — the batch
// facts the bound paths read, the flags the current exit publishes to compute, and the residual
// stream (absent until start(), released by norm / to_pp / take_output). Owned by the engine for
// the duration of one forward (one per TBO microbatch).
#pragma once

#include <optional>

#include "layouts/batch_facts.h"
#include "runtime/residual/exit_flags.h"
#include "runtime/residual/stream.h"

namespace seam::residual {

struct ForwardBatch {
  BatchFacts facts;
  ExitFlags exit_flags;                 ///< published by the open exit scope, if any
  std::optional<ResidualStream> residual_stream;  ///< the guide's forward_batch.residual_stream
};

}  // namespace seam::residual
