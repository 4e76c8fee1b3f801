#include "runtime/boundary/plan.h"

#include "seam/errors.h"
#include "runtime/boundary/output_move.h"

namespace seam::boundary {

namespace {
// A pipeline receiver reads the hidden states as the residual when the stream arrives written: the
// producer's update ran at the producer, or its exit wrote the update as it moved the rows (§2.8).
bool arrives_written(const PlanContext& ctx, BatchVariant v, const StageDeclaration& consumer) {
  const StageDeclaration* producer = consumer.previous();
  if (!producer) return false;
  if (producer->update.at_producer) return true;
  if (producer->kind != StageKind::FFN) return false;  // only an FFN exit moves rows
  const ResolvedStage exiting = resolve_stage(ctx, v, *producer, &consumer, Arrival{});
  return select_output_move(ctx.topology, v, exit_edge(exiting)).writes_stream();
}
}  // namespace

void StagePlan::no_path(BatchVariant v) {
  throw NotSupportedError("no stage boundary path for the active " + std::string(batch_variant_name(v)) + " batch");
}

StagePlan::StagePlan(const PlanContext& ctx, StageDeclaration decl, std::optional<StageDeclaration> following,
                     NormRef norm, StageOptions options, ArrivalMemo* memo)
    : ctx_(ctx), decl_(std::move(decl)), following_(std::move(following)), norm_(norm), options_(std::move(options)) {
  ctx_.validate();
  reject_unsupported_topology(ctx_, decl_);
  for (int i = 0; i < kBatchVariantCount; ++i) {
    const auto v = static_cast<BatchVariant>(i);
    if (!ctx_.topology.builds_variant(v)) continue;
    if (is_prepared_branch() && v != BatchVariant::ORDINARY)
      throw NotSupportedError("prepared branch transport requires ordinary token rows");
    paths_[i] = bind(v, memo);
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
        // The first candidate runs before anything else touches the residual and certifies its own
        // fallback; no certificate where the residual is gathered first, the input is CP-gathered,
        // or a second capability's path (chosen per batch) may run instead.
        const bool certifies = !p->entry.non_plain && step.all_reduce == SumGroup::ATTN_TP &&
                               step.residual_move == ResidualMove::NONE && step.input_move == InputMove::NONE;
        if (certifies && !p->ffn_fusions.empty()) p->preserves_residual = p->ffn_fusions.front().preserves_residual;
      } else if (p->incoming.need->read.norms_plainly && !p->incoming.produced.transform) {
        p->carried_fusions = provider->attention_input(*this);
      }
    }
  }
}

void StagePlan::adopt_capture_certificate(const StagePlan& next) {
  if (decl_.kind != StageKind::ATTENTION) return;  // only an attention's prepare captures
  for (size_t v = 0; v < paths_.size(); ++v)
    if (paths_[v] && next.paths_[v]) paths_[v]->capture_preserves_residual = next.paths_[v]->preserves_residual;
}

BoundPath StagePlan::bind(BatchVariant v, ArrivalMemo* memo) const {
  BoundPath p;
  p.variant = v;
  const StageDeclaration* following = following_ ? &*following_ : nullptr;
  const Arrival arrival = arrival_at(ctx_, v, decl_, memo);
  p.stage = resolve_stage(ctx_, v, decl_, following, arrival);
  p.incoming = make_edge(ctx_, v, decl_.previous(), &decl_, memo);
  if (is_prepared_branch()) {
    // The branch input arrives already read on the source's rows; branch_input moves it (and the
    // residual) to this stage's rows without a second update or norm.
    p.incoming.produced = arrival.produced;
    p.incoming.residual = arrival.residual;
    p.branch = BranchEntry{RowMove::checked(arrival.produced.layout, p.stage.input.layout),
                           RowMove::checked(arrival.residual, p.stage.residual)};
  } else {
    p.entry = bind_entry(p.incoming, enters_stack(), CpMoves::of(ctx_.topology, v));
    p.arrives_written = arrives_written(ctx_, v, decl_);
  }
  p.outgoing = make_edge(ctx_, v, &decl_, following, memo);
  if (decl_.kind == StageKind::FFN) {
    p.output_move = select_output_move(ctx_.topology, v, exit_edge(p.stage));
    p.ffn_exit = FfnExitFacts::of(ctx_.topology, v, decl_, p.stage, p.output_move);
  } else if (decl_.reduction == ProducerReduction::SCOPED) {
    p.mixer_exit = MixerDecision::of(ctx_.topology, v, p.stage.output);
  }
  return p;
}

}  // namespace seam::boundary
