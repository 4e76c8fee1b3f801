// Stage factories: connect declarations into a local sequence and build each stage's plan.
// make_stages() sets every stage's source (the external `previous`, the stage before it, or a
// prepared branch) and marks `terminal` on the last; previous/following describe the neighbours
// outside the sequence, so a neighbour built independently (even on another pipeline rank) binds
// the same edge.
#pragma once

#include <optional>
#include <vector>

#include "runtime/boundary/stage.h"

namespace seam::boundary {

/// One stage of make_stages: (declaration, norm[, options]).
struct StageSpec {
  StageDeclaration declaration;
  NormRef norm = nullptr;
  StageOptions options = {};
};

/// The sequence's outside: the producer before the first stage (nullopt: the stack starts here),
/// the consumer after the last, whether the last stage ends the model's stack, and — instead of
/// `previous` — the stage whose already-read input a branch reuses.
/// `hands_off_to_pipeline`: a pipeline cut follows the last stage (the partition ends before the
/// stack does); the receiving rank passes `previous` through StageDeclaration::before_pipeline_cut().
struct StageNeighbours {
  std::optional<StageDeclaration> previous = std::nullopt;
  std::optional<StageDeclaration> following = std::nullopt;
  bool terminal = false;
  std::optional<StageDeclaration> prepared_from = std::nullopt;
  bool hands_off_to_pipeline = false;
};

/// Builds one StageBoundary per spec, in order.
std::vector<StageBoundary> make_stages(const PlanContext& ctx, std::vector<StageSpec> stages,
                                       const StageNeighbours& neighbours = {});
/// A single attention stage whose declaration carries its source (with_previous / entering_stack /
/// with_prepared_from, as_terminal); `following`, when given, must name it as its previous.
StageBoundary make_attn_stage(const PlanContext& ctx, StageSpec stage,
                              const std::optional<StageDeclaration>& following = std::nullopt);
/// The FFN counterpart of make_attn_stage.
StageBoundary make_ffn_stage(const PlanContext& ctx, StageSpec stage,
                             const std::optional<StageDeclaration>& following = std::nullopt);

}  // namespace seam::boundary
