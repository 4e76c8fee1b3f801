#include <cstdint>
#include "tools/sim/reference.h"

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
  kernels::rms_norm(ref.residual, norm_of(model, 0), input);
  for (int64_t s = 0; s < model.stage_count(); ++s) {
    ref.stage_residuals.push_back(residual::OwnedTensor::clone(ref.residual));
    model.compute_sum(s, input, ids, shards.of(model.kind(s)), out);
    // The next stage's input (or the final norm's output) from the updated residual.
    const Tensor& next = s + 1 < model.stage_count() ? input : ref.output;
    kernels::add_rms_norm(out, ref.residual, nullptr, norm_of(model, s + 1), next);
  }
  return ref;
}

}  // namespace seam::sim
