// The plain residual operations (§5.2): ADD (h + residual), NORM_READ (RMSNorm of the residual,
// fused with a plain add in the reference's FP32 order) and NORM_QUANT_READ (the same, optionally
// quantised to FP8 per token, with an optional post-residual addition).
#pragma once

#include "runtime/residual/update_read.h"

namespace seam::residual {

/// ADD: residual' = h + residual (rounded to the activation dtype), written into the residual's
/// storage. Plain, not at the producer, outlives its layer.
const StageUpdate& add_update();

/// NORM_READ: input = RMSNorm(residual). Rejects a quantised format and a post-residual addition.
const StageRead& norm_read();

/// NORM_QUANT_READ: NORM_READ plus the FP8 per-token format and a post-residual addition.
const StageRead& norm_quant_read();

/// The plain layer: NORM_QUANT_READ for attention, NORM_READ for the FFN, ADD for both updates.
LayerResidual plain_residual();

}  // namespace seam::residual
