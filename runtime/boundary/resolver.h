// The resolver (§2.2–§2.4): turns declarations into resolved contracts for one batch variant —
// what rows a stage reads and returns, what its output owes and may leave to others, where the
// residual sits, and what arrives at the next stage. Both neighbours of an edge compute it with
// the same function from the same two declarations, so independently built stages agree.
#pragma once

#include <array>
#include <unordered_map>

#include "layouts/batch_facts.h"
#include "layouts/topology.h"
#include "runtime/boundary/contracts.h"
#include "runtime/boundary/declaration.h"
#include "runtime/boundary/policy.h"

namespace seam::boundary {

/// Everything construction reads besides the declarations: the topology and the resolved policy.
struct PlanContext {
  Topology topology;
  ReductionPolicy policy = ReductionPolicy::RS_RSV;
  /// Throws ValueError for an inconsistent topology or an unresolved (auto) policy.
  void validate() const;
};

/// The canonical row layouts of a variant: every rank's rows (full), the rows attention runs on
/// (attention = {ATTN_DP, ATTN_CP}) and this rank's attention-TP slice of them (local).
struct RowLayouts {
  Layout full, attention, local;
};
RowLayouts row_layouts(const Topology& topology, BatchVariant variant);

/// What arrives at a consumer: the producer's output as the consumer sees it, the residual rows
/// before the boundary, and which update kinds may arrive.
struct Arrival {
  StageOutput produced;
  Layout residual;
  UpdateCapabilities capabilities;
};

/// Arrivals already resolved, per variant, for declarations reached through source chains: one
/// construction (one context, its declarations alive) shares it so each stage's arrival is resolved
/// once, not once per later stage of a run of attention stages.
class ArrivalMemo {
 public:
  const Arrival* find(BatchVariant v, const StageDeclaration* decl) const;
  void store(BatchVariant v, const StageDeclaration* decl, const Arrival& arrival);

 private:
  std::array<std::unordered_map<const StageDeclaration*, Arrival>, kBatchVariantCount> at_;
};

/// The rows a consumer needs (needs no knowledge of its source).
StageInput resolve_input(const PlanContext& ctx, BatchVariant v, const StageDeclaration& decl);
/// A stage resolved for variant v. `following` is the consumer (nullptr when not described);
/// `arrival` is what reaches the stage (needed for attention, whose residual stays where it arrived).
ResolvedStage resolve_stage(const PlanContext& ctx, BatchVariant v, const StageDeclaration& decl,
                            const StageDeclaration* following, const Arrival& arrival);
/// What arrives at `decl` from its declared source (stack entry, previous output, prepared branch).
/// Throws ValueError("attention output needs its incoming residual placement") when an attention
/// producer upstream has no described source. `memo`, if given, serves and keeps upstream arrivals.
Arrival arrival_at(const PlanContext& ctx, BatchVariant v, const StageDeclaration& decl, ArrivalMemo* memo = nullptr);
/// What `producer` hands to `consumer` (nullptr: not described).
Arrival arrival_from(const PlanContext& ctx, BatchVariant v, const StageDeclaration& producer,
                     const StageDeclaration* consumer, ArrivalMemo* memo = nullptr);
/// The residual rows while `consumer` runs, given what arrives.
Layout consumer_residual(const PlanContext& ctx, BatchVariant v, const StageDeclaration& consumer,
                         const Arrival& arrival);
/// The edge between `producer` (nullptr: stack entry) and `consumer` (nullptr: not described).
EdgeDecl make_edge(const PlanContext& ctx, BatchVariant v, const StageDeclaration* producer,
                   const StageDeclaration* consumer, ArrivalMemo* memo = nullptr);
/// Construction-time rejections of unsupported CP/MoE/MHC combinations (§2.3). NotSupportedError.
void reject_unsupported_topology(const PlanContext& ctx, const StageDeclaration& decl);

}  // namespace seam::boundary
