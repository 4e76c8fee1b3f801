// Seam's fused all-reduce + residual add + RMSNorm on device tensors, as a fusion provider (§7):
// one DeviceCommunicator call (all_reduce_add_rms_norm) completes the owed sum, updates the
// residual in place and writes the norm — the same bits as the unfused all-reduce, then add +
// RMSNorm. A stage's norm (its NormRef) must be a residual::RmsNorm with its weight on the device.
//
// A candidate declines — before touching anything — when no group is owed, for host tensors, an
// empty batch, a dtype other than fp32/bf16/fp16, a post-residual addition, or a size the
// selection table gives to the two-shot all-reduce (the fused kernel is one-shot). These depend
// only on facts the group's ranks share, so the group declines or accepts together.
#pragma once

#include <array>
#include <memory>

#include "runtime/boundary/fusion.h"
#include "runtime/boundary/rows/process_groups.h"
#include "seam/device_communicator.h"

namespace seam::device {

class DeviceAllReduceNormFusion : public boundary::FusionProvider {
 public:
  /// comms[g]: the device communicator of group kind g of `groups` (null: a group of one rank);
  /// `groups` (where the calls are recorded) must outlive every plan built with this provider.
  DeviceAllReduceNormFusion(boundary::rows::ProcessGroups& groups,
                            std::array<std::shared_ptr<DeviceCommunicator>, boundary::rows::kGroupKindCount> comms);

  /// One carried candidate completing the sum the previous stage carries (FusionArgs::group).
  std::vector<boundary::CarriedFusion> attention_input(const boundary::StagePlan& plan) const override;
  /// One candidate completing an attention-TP sum at an FFN input.
  std::vector<boundary::FusedMlpInput> ffn_input(const boundary::StagePlan& plan) const override;

  static constexpr const char* kName = "seam device all_reduce+add+rms_norm";

 private:
  boundary::FusionRun candidate(const boundary::StagePlan& plan) const;

  boundary::rows::ProcessGroups& groups_;
  std::array<std::shared_ptr<DeviceCommunicator>, boundary::rows::kGroupKindCount> comms_;
};

}  // namespace seam::device
