// Shared construction helpers for the planner tests: contexts, pattern stacks built stage by
// stage (as independent layers or pipeline ranks would), batches.
#pragma once

#include <cstdint>

#include <functional>
#include <string_view>
#include <vector>

#include "layouts/batch_facts.h"
#include "runtime/boundary/factories.h"

namespace seam::boundary::testing {

/// A context of tp ranks with attn_dp replicas (attn_tp derived), pure MoE-TP, a policy and tweaks.
inline PlanContext context(int tp, int attn_dp = 1, ReductionPolicy policy = ReductionPolicy::RS_RSV,
                           const std::function<void(Topology&)>& tweak = {}) {
  PlanContext ctx;
  ctx.topology = Topology::make(tp, attn_dp);
  ctx.policy = policy;
  if (tweak) tweak(ctx.topology);
  ctx.topology.validate();
  return ctx;
}

inline StageDeclaration attn() { return declare_attn(); }
inline StageDeclaration mixer() {
  return declare_attn({.reduction = ProducerReduction::SCOPED, .gathers_tp_input = false});
}
inline StageDeclaration dense(bool next_sparse = false) { return declare_ffn({.next_sparse = next_sparse}); }
inline StageDeclaration moe() { return declare_ffn({.sparse = true, .next_sparse = true}); }

/// Declarations for a pattern: A attention, M mixer, F dense FFN, E MoE FFN.
inline std::vector<StageDeclaration> declarations(std::string_view pattern) {
  std::vector<StageDeclaration> out;
  for (char c : pattern) out.push_back(c == 'A' ? attn() : c == 'M' ? mixer() : c == 'E' ? moe() : dense());
  return out;
}

/// Builds every stage with its own make_stages() call, told only its neighbours — as separate
/// layers (or pipeline ranks) do.
inline std::vector<StageBoundary> independent_stages(const PlanContext& ctx, const std::vector<StageDeclaration>& decls) {
  std::vector<StageDeclaration> connected;
  for (size_t i = 0; i < decls.size(); ++i)
    connected.push_back(i == 0 ? decls[0].entering_stack() : decls[i].with_previous(connected.back()));
  std::vector<StageBoundary> out;
  for (size_t i = 0; i < decls.size(); ++i) {
    StageNeighbours around;
    if (i > 0) around.previous = connected[i - 1];
    if (i + 1 < decls.size()) around.following = decls[i + 1].with_previous(connected[i]);
    around.terminal = i + 1 == decls.size();
    out.push_back(make_stages(ctx, {{decls[i]}}, around).front());
  }
  return out;
}

/// A batch of `tokens` per DP replica seen from dp_rank 0.
inline BatchFacts batch(const PlanContext& ctx, std::vector<int64_t> tokens, PaddingMode mode,
                        BatchVariant variant = BatchVariant::ORDINARY) {
  return BatchFacts::make(tokens, 0, ctx.topology.attn_tp, mode, variant);
}
inline BatchFacts batch(const PlanContext& ctx, PaddingMode mode = PaddingMode::MAX_LEN,
                        BatchVariant variant = BatchVariant::ORDINARY) {
  return batch(ctx, std::vector<int64_t>(ctx.topology.attn_dp, 8), mode, variant);
}

/// Whether every adjacent pair binds the same edge for every variant both built: the whole edge
/// where the producer describes its consumer, else the producer's half.
inline bool edges_agree(const std::vector<StageBoundary>& stages) {
  for (size_t i = 0; i + 1 < stages.size(); ++i)
    for (int v = 0; v < kBatchVariantCount; ++v) {
      const auto variant = static_cast<BatchVariant>(v);
      const StagePlan& a = stages[i].plan();
      const StagePlan& b = stages[i + 1].plan();
      if (a.has_path(variant) != b.has_path(variant)) return false;
      if (!a.has_path(variant)) continue;
      const EdgeDecl& out = a.path(variant).outgoing;
      const EdgeDecl& in = b.path(variant).incoming;
      if (out.need ? !(out == in) : !out.same_producer_half(in)) return false;
    }
  return true;
}

}  // namespace seam::boundary::testing
