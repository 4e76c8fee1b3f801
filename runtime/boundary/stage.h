// StageBoundary: the model-facing object of one stage. It owns its StagePlan (shared, immutable)
// and answers the per-batch questions: which path the active variant takes and how an exit
// completes. StageRunner (runner.h) executes those answers on this rank's groups and stream.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/boundary/exit.h"
#include "runtime/boundary/plan.h"

namespace seam::boundary {

class StageBoundary {
 public:
  explicit StageBoundary(std::shared_ptr<const StagePlan> plan) : plan_(std::move(plan)) {}

  const StagePlan& plan() const { return *plan_; }
  const StageDeclaration& declaration() const { return plan_->declaration(); }
  StageKind kind() const { return plan_->kind(); }
  NormRef norm() const { return plan_->norm(); }
  const FusionProvider* fusions() const { return plan_->fusions(); }

  /// The FFN exit decision for this batch (made once; the exit scope keeps it).
  FfnDecision decide_ffn_exit(const BatchFacts& batch) const;
  /// Opens an FFN exit scope publishing the decision's flags into `slot` (the ForwardBatch's flags).
  /// UsageError on a non-FFN stage.
  FfnExit ffn_exit(ExitFlags& slot, const BatchFacts& batch) const { return FfnExit(slot, decide_ffn_exit(batch)); }
  /// Opens a single-stage mixer's exit scope. UsageError on a PARTIAL attention or an FFN.
  MixerExit mixer_exit(ExitFlags& slot, const BatchFacts& batch) const { return MixerExit(slot, mixer_decision(batch)); }
  const MixerDecision& mixer_decision(const BatchFacts& batch) const;

 private:
  std::shared_ptr<const StagePlan> plan_;
};

}  // namespace seam::boundary
