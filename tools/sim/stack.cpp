#include <cstdint>
#include "tools/sim/stack.h"

#include "runtime/boundary/introspection.h"
#include "tools/plan/pattern.h"

namespace seam::sim {

using namespace boundary;

SimStack::SimStack(const Model& model, const PlanContext& ctx, int pp, int pp_rank,
                   std::shared_ptr<const FusionProvider> fusions, Device device)
    : model_(model) {
  const std::vector<StageDeclaration> decls = plan::declare_pattern(model.config().stages);
  const auto n = static_cast<int64_t>(decls.size());
  begin_ = n * pp_rank / pp;
  end_ = n * (pp_rank + 1) / pp;
  terminal_ = end_ == n;
  for (int64_t i = 0; i < n && after_tbo_split_ == 0; ++i)
    if (decls[static_cast<size_t>(i)].exit_rows() == HandoffRows::TBO_SPLIT) after_tbo_split_ = i + 1;

  // The neighbours' declarations, connected as the ranks before and after connect them: each cut
  // marks the FFN whose rows cross it.
  std::vector<StageDeclaration> connected;
  for (int r = 0; r < pp; ++r)
    for (int64_t s = n * r / pp, end = n * (r + 1) / pp; s < end; ++s) {
      connected.push_back(s == 0 ? decls[0].entering_stack() : decls[static_cast<size_t>(s)].with_previous(connected.back()));
      if (s + 1 == end && r + 1 < pp) connected.back() = connected.back().before_pipeline_cut();
    }
  StageNeighbours around;
  if (begin_ > 0) around.previous = connected[static_cast<size_t>(begin_ - 1)];
  if (end_ < n) around.following = decls[static_cast<size_t>(end_)].with_previous(connected[static_cast<size_t>(end_ - 1)]);
  around.terminal = terminal_;
  around.hands_off_to_pipeline = !terminal_;

  auto make_norm = [&](int64_t stage) {
    Tensor weight = model.norm_weight(stage);
    if (device.is_cuda()) {
      weights_.push_back(residual::OwnedTensor::clone(weight, device));
      weight = weights_.back().view;
    }
    return std::make_unique<residual::RmsNorm>(weight, model.config().eps);
  };
  std::vector<StageSpec> specs;
  for (int64_t i = begin_; i < end_; ++i) {
    norms_.push_back(make_norm(i));
    specs.push_back({decls[static_cast<size_t>(i)], norms_.back().get(), {.fusions = fusions}});
  }
  norms_.push_back(make_norm(n));
  stages_ = make_stages(ctx, std::move(specs), around);
}

std::vector<std::string> SimStack::describe() const {
  std::vector<std::string> lines;
  for (int64_t i = begin_; i < end_; ++i) {
    bool first = true;
    for (const std::string& line : describe_plan(stages_[static_cast<size_t>(i - begin_)].plan())) {
      const std::string prefix = first ? label(i) : "";
      lines.push_back(prefix + std::string(8 - std::min<size_t>(prefix.size(), 7), ' ') + line);
      first = false;
    }
  }
  return lines;
}

std::string SimStack::label(int64_t index) const { return "L" + std::to_string(index) + " " + model_.kind(index); }

}  // namespace seam::sim
