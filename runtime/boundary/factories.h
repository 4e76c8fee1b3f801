// Stage factories: connect declarations into a local sequence and build each stage's plan.
// make_stages() sets every stage's source (the external `previous`, the stage before it, or a
// prepared branch) and marks `terminal` on the last; previous/following describe the neighbours
// outside the sequence, so a neighbour built independently (even on another pipeline rank) binds
// the same edge.
#pragma once

#include <optional>
#include <vector>

#include "runtime/boundary/stage.h"
#include "seam/stage_declaration.h"

namespace seam::boundary {

/// One stage of make_stages: (declaration, norm[, options]).
struct StageSpec {
  StageDeclaration declaration;
  NormRef norm = nullptr;
  StageOptions options = {};
};

// StageNeighbours (the sequence's outside) lives in seam/stage_declaration.h.

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
