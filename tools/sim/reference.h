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
  /// The largest magnitude a sum of the run can pass through, in any order: a stage's residual
  /// plus its partials' magnitudes (Model::compute_sum), or an embedding.
  float largest_sum = 0.0f;
  float largest_embedding = 0.0f;  ///< the largest |embedding| element
};

/// Runs `model` on tokens 0 .. tokens-1.
ReferenceOutput run_reference(const Model& model, int64_t tokens, const StageShards& shards);

/// For a bf16 run: sets the model's grid to the finest power of two (2^-7 .. 2^-2) on which every
/// sum the parallel run forms is exact, whatever its order: the largest sum, and an embedding cut
/// into `embedding_shares` shares (each on grid / shares), stay within 256 grid steps, the integers
/// bf16 holds exactly. Returns the reference on that grid; the model's grid stays 0 when none fits.
ReferenceOutput run_reference_on_exact_grid(Model& model, int64_t tokens, const StageShards& shards,
                                            int embedding_shares);

}  // namespace seam::sim
