#include <cstdint>
#include "tools/sim/reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/norm/rms_norm.h"

namespace seam::sim {

namespace {
kernels::RmsNormSpec norm_of(const Model& model, int64_t stage) {
  return {model.norm_weight(stage).data, DType::f32, kernels::NormWeight::plain, model.config().eps};
}
}  // namespace

ReferenceOutput run_reference(const Model& model, int64_t tokens, const StageShards& shards) {
  const ModelConfig& cfg = model.config();
  const size_t bytes = static_cast<size_t>(tokens * cfg.hidden) * dtype_size(cfg.dtype) + 64;
  ReferenceOutput ref;
  ref.output_storage = Buffer(bytes);
  ref.residual_storage = Buffer(bytes);
  ref.output = ref.output_storage.as_tensor(cfg.dtype, tokens, cfg.hidden);
  ref.residual = ref.residual_storage.as_tensor(cfg.dtype, tokens, cfg.hidden);
  Buffer input_storage(bytes), output_storage(bytes);
  const Tensor input = input_storage.as_tensor(cfg.dtype, tokens, cfg.hidden);
  const Tensor out = output_storage.as_tensor(cfg.dtype, tokens, cfg.hidden);
  std::vector<int64_t> ids(static_cast<size_t>(tokens));
  std::iota(ids.begin(), ids.end(), int64_t{0});

  for (int64_t t = 0; t < tokens; ++t) model.embed(t, ref.residual, t);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < cfg.hidden; ++c)
      ref.largest_embedding = std::max(ref.largest_embedding, std::fabs(load(ref.residual, t, c)));
  ref.largest_sum = ref.largest_embedding;
  kernels::rms_norm(ref.residual, norm_of(model, 0), input);
  for (int64_t s = 0; s < model.stage_count(); ++s) {
    ref.stage_residuals.push_back(residual::OwnedTensor::clone(ref.residual));
    ref.largest_sum = std::max(ref.largest_sum, model.compute_sum(s, input, ids, shards.of(model.kind(s)), out, ref.residual));
    // The next stage's input (or the final norm's output) from the updated residual.
    const Tensor& next = s + 1 < model.stage_count() ? input : ref.output;
    kernels::add_rms_norm(out, ref.residual, nullptr, norm_of(model, s + 1), next);
  }
  return ref;
}

ReferenceOutput run_reference_on_exact_grid(Model& model, int64_t tokens, const StageShards& shards,
                                            int embedding_shares) {
  for (float grid = 0x1p-7f; grid <= 0x1p-2f; grid *= 2) {
    model.use_grid(grid);
    ReferenceOutput ref = run_reference(model, tokens, shards);
    // An embedding's shares are multiples of grid / shares whose sums stay within |embedding|.
    const float shares = static_cast<float>(embedding_shares);
    if (ref.largest_sum <= 256 * grid && ref.largest_embedding * shares <= 256 * grid) return ref;
  }
  model.use_grid(0.0f);
  return run_reference(model, tokens, shards);
}

}  // namespace seam::sim
