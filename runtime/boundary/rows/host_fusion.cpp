#include "runtime/boundary/rows/host_fusion.h"

#include <vector>

#include "kernels/norm/rms_norm.h"
#include "runtime/boundary/plan.h"
#include "runtime/boundary/rows/scratch.h"
#include "runtime/boundary/rows/tensor_collectives.h"
#include "runtime/residual/norm.h"

namespace seam::boundary::rows {

namespace {

// One stage's candidate state: its norm and the storage its result and the gathered partials live
// in (the result stays valid until the stage's next prepare). The group comes with each run.
struct FusedState {
  ProcessGroups* groups;
  kernels::RmsNormSpec norm;
  size_t max_gather_bytes;
  Scratch gathered;
  Scratch output;
};

bool fusable(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

std::optional<FusedRead> run_fused(FusedState& s, const FusionArgs& args) {
  const Tensor& partial = args.partial;
  if (!args.group) return std::nullopt;
  const GroupKind group = group_of(*args.group);
  const int k = s.groups->size(group);
  if (args.post_residual_addition || partial.rows == 0 || partial.device.is_cuda() || args.residual.device.is_cuda() || !fusable(partial.dtype) || !partial.is_contiguous() ||
      !args.residual.is_contiguous() || partial.bytes() * static_cast<size_t>(k) > s.max_gather_bytes)
    return std::nullopt;
  const Tensor out = s.output.get(partial, partial.rows);
  std::vector<Tensor> partials;
  if (k == 1) {
    partials.push_back(partial);
  } else {
    const Tensor all = s.gathered.get(partial, partial.rows * k);
    all_gather(*s.groups, group, partial, all).wait();
    for (int r = 0; r < k; ++r) partials.push_back(all.slice_rows(r * partial.rows, partial.rows));
  }
  kernels::reduce_add_rms_norm(partials, args.residual, s.norm, out);
  return FusedRead{out, args.residual};
}

}  // namespace

HostAllReduceNormFusion::HostAllReduceNormFusion(ProcessGroups& groups, size_t max_gather_bytes)
    : groups_(groups), max_gather_bytes_(max_gather_bytes) {}

FusionRun HostAllReduceNormFusion::candidate(const StagePlan& plan) const {
  const auto* norm = static_cast<const residual::RmsNorm*>(plan.norm());
  auto state = std::make_shared<FusedState>(FusedState{&groups_, norm->spec(), max_gather_bytes_, {}, {}});
  return [state](const FusionArgs& args) { return run_fused(*state, args); };
}

std::vector<CarriedFusion> HostAllReduceNormFusion::attention_input(const StagePlan& plan) const {
  // Only a stage with a producer receives carried work.
  if (!plan.declaration().previous() || !plan.norm()) return {};
  return {CarriedFusion{kName, candidate(plan)}};
}

std::vector<FusedMlpInput> HostAllReduceNormFusion::ffn_input(const StagePlan& plan) const {
  if (!plan.norm()) return {};
  return {FusedMlpInput{kName, SumGroup::ATTN_TP, candidate(plan), nullptr}};
}

}  // namespace seam::boundary::rows
