// One pipeline rank's part of the simulated stack, built as an engine builds it: the stack's
// declarations from the pattern (seam_plan's declare_pattern), this rank's contiguous partition
// connected with make_stages() and told only its neighbours' declarations, each stage with its
// input norm (a residual::RmsNorm, the stage's NormRef) and the shared fusion provider.
#pragma once

#include <cstdint>

#include <memory>
#include <string>
#include <vector>

#include "runtime/boundary/factories.h"
#include "runtime/residual/norm.h"
#include "runtime/residual/owned_tensor.h"
#include "tools/sim/model.h"

namespace seam::sim {

class SimStack {
 public:
  /// `device`: where the norms' weights live (the memory of the boundary's tensors).
  SimStack(const Model& model, const boundary::PlanContext& ctx, int pp, int pp_rank,
           std::shared_ptr<const boundary::FusionProvider> fusions, Device device = {});

  /// Global index of this partition's first stage, and one past its last.
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }
  /// Whether this partition ends the model's stack (it runs the final norm).
  bool terminal() const { return terminal_; }
  /// Stage `index` (global index, begin() <= index < end()).
  boundary::StageBoundary& stage(int64_t index) { return stages_[static_cast<size_t>(index - begin_)]; }
  /// Stage `index`'s input norm, and the final norm.
  residual::RmsNorm& norm(int64_t index) { return *norms_[static_cast<size_t>(index - begin_)]; }
  residual::RmsNorm& final_norm() { return *norms_.back(); }
  /// The plan, one line per bound path: "L<i> <letter>  <path line>".
  std::vector<std::string> describe() const;
  /// "L<index> <kind>": a stage's label in the plan and in messages.
  std::string label(int64_t index) const;
  /// The stage right after the first one whose exit hands off TBO_SPLIT rows (0: none).
  int64_t after_tbo_split() const { return after_tbo_split_; }

 private:
  const Model& model_;
  int64_t begin_ = 0, end_ = 0;
  int64_t after_tbo_split_ = 0;
  bool terminal_ = false;
  std::vector<residual::OwnedTensor> weights_;  ///< the norms' weights on the device (host: the model's)
  std::vector<std::unique_ptr<residual::RmsNorm>> norms_;  ///< each stage's input norm, then the final norm
  std::vector<boundary::StageBoundary> stages_;
};

}  // namespace seam::sim
