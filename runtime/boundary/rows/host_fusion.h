// Seam's built-in fused all-reduce + residual add + RMSNorm on host memory, as a fusion provider
// (§7). Each rank all-gathers the group's partials and runs the fused reduce+add+norm kernel on
// them — one collective and one pass over the rows instead of an all-reduce, then an add+norm —
// summing the partials in group rank order in FP32 and rounding once, as an unfused all-reduce
// returns them. A stage's norm (its NormRef) must be a residual::RmsNorm.
//
// A candidate completes the group the runner passes (FusionArgs::group). It declines — before
// touching anything — when no group is owed, for an empty batch, device tensors (seam::cuda's
// DeviceAllReduceNormFusion serves those), a dtype other than
// fp32/bf16/fp16, a non-contiguous tensor, a post-residual addition, or gathered partials larger
// than max_gather_bytes (an all-gather moves group-size times an all-reduce's bytes). These depend
// only on facts every rank of the group shares, so the group declines or accepts together.
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/boundary/fusion.h"
#include "runtime/boundary/rows/process_groups.h"

namespace seam::boundary::rows {

class HostAllReduceNormFusion : public FusionProvider {
 public:
  /// `groups` must outlive every plan built with this provider.
  explicit HostAllReduceNormFusion(ProcessGroups& groups, size_t max_gather_bytes = size_t(1) << 20);

  /// One carried candidate completing the sum the previous stage carries (FusionArgs::group).
  std::vector<CarriedFusion> attention_input(const StagePlan& plan) const override;
  /// One candidate completing an attention-TP sum at an FFN input.
  std::vector<FusedMlpInput> ffn_input(const StagePlan& plan) const override;

  static constexpr const char* kName = "seam host all_reduce+add+rms_norm";

 private:
  FusionRun candidate(const StagePlan& plan) const;

  ProcessGroups& groups_;
  size_t max_gather_bytes_;
};

}  // namespace seam::boundary::rows
