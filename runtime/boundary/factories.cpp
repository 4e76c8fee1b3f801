#include "runtime/boundary/factories.h"

#include "seam/errors.h"

namespace seam::boundary {

namespace {
void check_options(const StageSpec& spec) {
  if (spec.declaration.kind == StageKind::FFN && spec.options.qkv_latent)
    throw TypeError("unsupported FFN options: ['qkv_latent_func']");
}

StageBoundary make_single_stage(const PlanContext& ctx, StageSpec stage, const std::optional<StageDeclaration>& following) {
  check_options(stage);
  if (stage.declaration.source == StageDeclaration::Source::UNSET)
    throw ValueError("a single stage's declaration must carry its source (with_previous, entering_stack or "
                     "with_prepared_from)");
  if (following && !(following->previous() && *following->previous() == stage.declaration))
    throw ValueError("the following declaration must consume this stage's output");
  return StageBoundary(std::make_shared<const StagePlan>(ctx, stage.declaration, following, stage.norm, stage.options));
}
}  // namespace

std::vector<StageBoundary> make_stages(const PlanContext& ctx, std::vector<StageSpec> stages,
                                       const StageNeighbours& n) {
  if (stages.empty()) throw ValueError("make_stages needs at least one stage");
  for (const StageSpec& s : stages) {
    if (s.declaration.source != StageDeclaration::Source::UNSET)
      throw ValueError("pass input sources to make_stages, not its declarations");
    if (s.declaration.terminal) throw ValueError("pass terminal to make_stages, not its declarations");
    check_options(s);
  }
  if (n.previous && n.prepared_from) throw ValueError("choose a previous output or a prepared branch input");

  // Connect the sequence first: each stage's declaration names its source, the last is terminal.
  std::vector<StageDeclaration> decls;
  decls.reserve(stages.size());
  for (size_t i = 0; i < stages.size(); ++i) {
    const StageDeclaration& d = stages[i].declaration;
    StageDeclaration connected = i > 0           ? d.with_previous(decls.back())
                                 : n.previous    ? d.with_previous(*n.previous)
                                 : n.prepared_from ? d.with_prepared_from(*n.prepared_from)
                                                   : d.entering_stack();
    if (i + 1 == stages.size() && n.terminal) connected = connected.as_terminal();
    decls.push_back(std::move(connected));
  }
  if (n.hands_off_to_pipeline) {
    if (n.terminal) throw ValueError("a terminal stage ends the layer stack: it hands off to no pipeline rank");
    decls.back() = decls.back().before_pipeline_cut();
    // The stages before it take their declarations from the marked chain.
    for (size_t i = decls.size() - 1; i > 0; --i) decls[i - 1] = *decls[i].previous();
  }
  std::vector<std::shared_ptr<StagePlan>> plans;
  plans.reserve(stages.size());
  // Each stage resolves what reaches it from its producer's memoised arrival: linear in a run of
  // attention stages, where each arrival depends on every arrival before it.
  ArrivalMemo memo;
  for (size_t i = 0; i < stages.size(); ++i) {
    // The next stage is described by its bare declaration plus its source (this stage).
    const std::optional<StageDeclaration> following = i + 1 < stages.size() ? std::optional(decls[i + 1]) : n.following;
    plans.push_back(std::make_shared<StagePlan>(ctx, decls[i], following, stages[i].norm, stages[i].options, &memo));
  }
  // A local consumer's input path may certify it leaves the residual untouched (§4.4): its
  // producer's capture needs no copy then. A neighbour outside the sequence certifies nothing.
  for (size_t i = 0; i + 1 < plans.size(); ++i) plans[i]->adopt_capture_certificate(*plans[i + 1]);
  std::vector<StageBoundary> out;
  out.reserve(plans.size());
  for (std::shared_ptr<StagePlan>& plan : plans) out.emplace_back(std::move(plan));
  return out;
}

StageBoundary make_attn_stage(const PlanContext& ctx, StageSpec stage, const std::optional<StageDeclaration>& following) {
  if (stage.declaration.kind != StageKind::ATTENTION) throw TypeError("make_attn_stage requires an attention declaration");
  return make_single_stage(ctx, std::move(stage), following);
}

StageBoundary make_ffn_stage(const PlanContext& ctx, StageSpec stage, const std::optional<StageDeclaration>& following) {
  if (stage.declaration.kind != StageKind::FFN) throw TypeError("make_ffn_stage requires an FFN declaration");
  return make_single_stage(ctx, std::move(stage), following);
}

}  // namespace seam::boundary
