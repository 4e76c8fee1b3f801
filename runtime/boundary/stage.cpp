#include "runtime/boundary/stage.h"

#include "seam/errors.h"

namespace seam::boundary {

FfnDecision StageBoundary::decide_ffn_exit(const BatchFacts& batch) const {
  if (kind() != StageKind::FFN) throw UsageError("an FFN exit scope needs an FFN stage");
  return boundary::decide_ffn_exit(plan_->path(batch.variant()).ffn_exit, batch, plan_->fusions(), plan_.get());
}

const MixerDecision& StageBoundary::mixer_decision(const BatchFacts& batch) const {
  if (kind() != StageKind::ATTENTION || plan_->finishes_directly())
    throw UsageError("a mixer exit scope needs a SCOPED attention stage");
  return plan_->path(batch.variant()).mixer_exit;
}

}  // namespace seam::boundary
