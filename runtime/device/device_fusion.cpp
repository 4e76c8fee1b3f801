#include "runtime/device/device_fusion.h"

#include <utility>

#include "kernels/norm/rms_norm.h"
#include "runtime/boundary/plan.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/rows/scratch.h"
#include "runtime/device/device_comm_impl.h"
#include "runtime/device/current_stream.h"
#include "runtime/device/select.h"
#include "runtime/residual/norm.h"

namespace seam::device {

namespace {

using boundary::FusedRead;
using boundary::FusionArgs;

// One stage's candidate state: its norm and the storage its result lives in (valid until the
// stage's next prepare).
struct FusedState {
  boundary::rows::ProcessGroups* groups;
  const std::array<std::shared_ptr<DeviceCommunicator>, boundary::rows::kGroupKindCount>* comms;
  const residual::RmsNorm* norm;
  boundary::rows::Scratch output;
};

bool fusable(DType t) { return t == DType::f32 || t == DType::bf16 || t == DType::f16; }

std::optional<FusedRead> run_fused(FusedState& s, const FusionArgs& args) {
  const Tensor& partial = args.partial;
  if (!args.group || args.post_residual_addition || partial.rows == 0 || !fusable(partial.dtype) ||
      !partial.device.is_cuda() || !(args.residual.device == partial.device) || !(s.norm->device() == partial.device))
    return std::nullopt;
  const boundary::rows::GroupKind group = boundary::rows::group_of(*args.group);
  DeviceCommunicator* comm = (*s.comms)[static_cast<size_t>(group)].get();
  const Tensor out = s.output.get(partial, partial.rows);
  if (!comm) {
    kernels::add_rms_norm(partial, args.residual, nullptr, s.norm->spec(), out);
    return FusedRead{out, args.residual};
  }
  if (comm->path() != "peer" ||
      select_all_reduce(partial.bytes(), comm->size(), DeviceCommunicatorAccess::of(*comm).algo_override) != kernels::cuda::DeviceAlgo::one_shot)
    return std::nullopt;
  s.groups->traffic().record(group, boundary::rows::CollectiveKind::fused_all_reduce_norm, partial.bytes());
  comm->all_reduce_add_rms_norm(partial, args.residual, s.norm->spec(), out, current_stream());
  return FusedRead{out, args.residual};
}

}  // namespace

DeviceAllReduceNormFusion::DeviceAllReduceNormFusion(
    boundary::rows::ProcessGroups& groups,
    std::array<std::shared_ptr<DeviceCommunicator>, boundary::rows::kGroupKindCount> comms)
    : groups_(groups), comms_(std::move(comms)) {}

boundary::FusionRun DeviceAllReduceNormFusion::candidate(const boundary::StagePlan& plan) const {
  const auto* norm = static_cast<const residual::RmsNorm*>(plan.norm());
  auto state = std::make_shared<FusedState>(FusedState{&groups_, &comms_, norm, {}});
  return [state](const FusionArgs& args) { return run_fused(*state, args); };
}

std::vector<boundary::CarriedFusion> DeviceAllReduceNormFusion::attention_input(const boundary::StagePlan& plan) const {
  if (!plan.declaration().previous() || !plan.norm()) return {};
  return {boundary::CarriedFusion{kName, candidate(plan)}};
}

std::vector<boundary::FusedMlpInput> DeviceAllReduceNormFusion::ffn_input(const boundary::StagePlan& plan) const {
  if (!plan.norm()) return {};
  return {boundary::FusedMlpInput{kName, SumGroup::ATTN_TP, candidate(plan), nullptr}};
}

}  // namespace seam::device
