#include "runtime/boundary/plan.h"

#include "layouts/errors.h"
#include "runtime/boundary/output_move.h"

namespace seam::boundary {

void StagePlan::no_path(BatchVariant v) {
  throw NotSupportedError("no stage boundary path for the active " + std::string(batch_variant_name(v)) + " batch");
}

StagePlan::StagePlan(const PlanContext& ctx, StageDeclaration decl, std::optional<StageDeclaration> following,
                     NormRef norm, StageOptions options)
    : ctx_(ctx), decl_(std::move(decl)), following_(std::move(following)), norm_(norm), options_(std::move(options)) {
  ctx_.validate();
  reject_unsupported_topology(ctx_, decl_);
  for (int i = 0; i < kBatchVariantCount; ++i) {
    const auto v = static_cast<BatchVariant>(i);
    if (!ctx_.topology.builds_variant(v)) continue;
    if (is_prepared_branch() && v != BatchVariant::ORDINARY)
      throw NotSupportedError("prepared branch transport requires ordinary token rows");
    paths_[i] = bind(v);
  }
  // Providers see the finished plan. Fused kernels serve only a plain add into a plain norm: an
  // FFN keeps the candidates completing its owed sum; an attention keeps the carried-work
  // candidates (for sums an FFN exit may carry to it at run time).
  if (const FusionProvider* provider = fusions()) {
    for (auto& p : paths_) {
      if (!p || p->branch || !p->entry.plain) continue;
      const EntryStep& step = p->entry.plain->step;
      if (decl_.kind == StageKind::FFN) {
        if (!step.tries_fusions) continue;
        for (auto& candidate : provider->ffn_input(*this))
          if (candidate.completes == step.all_reduce) p->ffn_fusions.push_back(std::move(candidate));
      } else if (p->incoming.need->read.norms_plainly && !p->incoming.produced.transform) {
        p->carried_fusions = provider->attention_input(*this);
      }
    }
  }
}

BoundPath StagePlan::bind(BatchVariant v) const {
  BoundPath p;
  p.variant = v;
  const StageDeclaration* following = following_ ? &*following_ : nullptr;
  const Arrival arrival = arrival_at(ctx_, v, decl_);
  p.stage = resolve_stage(ctx_, v, decl_, following, arrival);
  p.incoming = make_edge(ctx_, v, decl_.previous(), &decl_);
  if (is_prepared_branch()) {
    // The branch input arrives already read on the source's rows; branch_input moves it (and the
    // residual) to this stage's rows without a second update or norm.
    p.incoming.produced = arrival.produced;
    p.incoming.residual = arrival.residual;
    p.branch = BranchEntry{RowMove::checked(arrival.produced.layout, p.stage.input.layout),
                           RowMove::checked(arrival.residual, p.stage.residual)};
  } else {
    p.entry = bind_entry(p.incoming, enters_stack(), CpMoves::of(ctx_.topology, v));
  }
  p.outgoing = make_edge(ctx_, v, &decl_, following);
  if (decl_.kind == StageKind::FFN) {
    p.output_move = select_output_move(ctx_.topology, v, p.stage);
    p.ffn_exit = FfnExitFacts::of(ctx_.topology, v, decl_, p.stage, p.output_move);
  } else if (decl_.reduction == ProducerReduction::SCOPED) {
    p.mixer_exit = MixerDecision::of(ctx_.topology, v, p.stage.output);
  }
  return p;
}

}  // namespace seam::boundary
