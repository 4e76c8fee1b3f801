// The single-process reference: the whole stack on every real token at once, no parallelism — each
// stage's full output (one shard), then the plain residual add + RMSNorm of the next stage's input
// (the reference FP32 order of kernels/norm), and the final norm.
#pragma once

#include <cstdint>

#include <vector>

#include "runtime/residual/owned_tensor.h"
#include "tools/sim/model.h"

namespace seam::sim {

struct ReferenceOutput {
  Buffer output_storage;
  Buffer residual_storage;
  Tensor output;    ///< final norm output, one row per token (global token order)
  Tensor residual;  ///< the residual the final norm read
  /// The residual each stage reads (stage 0: the embeddings), what an attention capture records.
  std::vector<residual::OwnedTensor> stage_residuals;
};

/// Runs `model` on tokens 0 .. tokens-1.
ReferenceOutput run_reference(const Model& model, int64_t tokens, const StageShards& shards);

}  // namespace seam::sim
