// StagePlan (construction): one stage's bound paths, built once — for every batch variant the
// topology supports, the resolved stage, its incoming and outgoing edges, the consumer step, the
// output move and the static half of the exit decision. It stores no tensors; a forward selects a
// path by the active variant (an array index) and never falls back to another variant.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "layouts/batch_facts.h"
#include "seam/tensor.h"
#include "runtime/boundary/entry.h"
#include "runtime/boundary/exit.h"
#include "runtime/boundary/fusion.h"
#include "runtime/boundary/resolver.h"

namespace seam::boundary {

/// The consumer's norm object: opaque to the planner, run by the residual read.
using NormRef = const void*;
/// Attention's hook that hands the prepared input to its QKV/latent projection.
using QkvLatentHook = std::function<void(const Tensor& input)>;

/// Per-stage constructor options: the attention QKV-latent hook (attention only) and a fusion provider.
struct StageOptions {
  QkvLatentHook qkv_latent = nullptr;
  std::shared_ptr<const FusionProvider> fusions = nullptr;
};

/// Everything bound for one batch variant.
struct BoundPath {
  BatchVariant variant = BatchVariant::ORDINARY;
  ResolvedStage stage;
  EdgeDecl incoming;
  EdgeDecl outgoing;        ///< consumer half empty when the following stage is not described
  BoundEntry entry;                    ///< a sequential stage's input steps
  std::optional<BranchEntry> branch;   ///< a prepared branch's input move (instead of `entry`)
  /// The producer leaves the stream written (its update runs at the producer, or its exit writes
  /// the update as it moves the rows on): a pipeline receiver reads the hidden states as the residual.
  bool arrives_written = false;
  std::vector<FusedMlpInput> ffn_fusions;      ///< provider candidates completing the entry's owed sum
  std::vector<CarriedFusion> carried_fusions;  ///< provider candidates for carried work (attention input)
  /// FFN: its input path's certificate — set when the first fused candidate completes the declared
  /// attention-TP sum on the rows the residual already holds (no other code touches it first).
  ResidualCertificate preserves_residual;
  /// Attention: the following local FFN's certificate for the same variant (make_stages copies it):
  /// a capture that needs no move keeps the residual this read wrote, uncopied (§4.4).
  ResidualCertificate capture_preserves_residual;
  OutputMove output_move;   ///< FFN stages
  FfnExitFacts ffn_exit;    ///< FFN stages
  MixerDecision mixer_exit; ///< SCOPED attention (mixer) stages
};

class StagePlan {
 public:
  /// Binds `decl` (its source and terminal already set) for every supported variant. `memo`: the
  /// upstream arrivals a construction of several stages shares (see ArrivalMemo).
  StagePlan(const PlanContext& ctx, StageDeclaration decl, std::optional<StageDeclaration> following, NormRef norm,
            StageOptions options, ArrivalMemo* memo = nullptr);

  const StageDeclaration& declaration() const { return decl_; }
  const std::optional<StageDeclaration>& following() const { return following_; }
  const PlanContext& context() const { return ctx_; }
  StageKind kind() const { return decl_.kind; }
  bool enters_stack() const { return decl_.source == StageDeclaration::Source::STACK_ENTRY; }
  bool is_prepared_branch() const { return decl_.source == StageDeclaration::Source::PREPARED_FROM; }
  bool terminal() const { return decl_.terminal; }
  /// An attention with a PARTIAL output publishes with finish(); every other stage through exit().
  bool finishes_directly() const {
    return decl_.kind == StageKind::ATTENTION && decl_.reduction == ProducerReduction::PARTIAL;
  }
  NormRef norm() const { return norm_; }
  const StageOptions& options() const { return options_; }
  const FusionProvider* fusions() const { return options_.fusions.get(); }

  /// The path for the active variant; NotSupportedError("no stage boundary path for the active
  /// <VARIANT> batch") when none was bound.
  const BoundPath& path(BatchVariant v) const {
    const auto& p = paths_[static_cast<size_t>(v)];
    if (!p) no_path(v);
    return *p;
  }
  bool has_path(BatchVariant v) const { return paths_[static_cast<size_t>(v)].has_value(); }

  /// Construction only (make_stages, before the plan is shared): an attention takes the capture
  /// certificate of `next`, the local stage that consumes its output, for every variant both bind.
  void adopt_capture_certificate(const StagePlan& next);

 private:
  [[noreturn]] static void no_path(BatchVariant v);
  BoundPath bind(BatchVariant v, ArrivalMemo* memo) const;

  PlanContext ctx_;
  StageDeclaration decl_;
  std::optional<StageDeclaration> following_;
  NormRef norm_;
  StageOptions options_;
  std::array<std::optional<BoundPath>, kBatchVariantCount> paths_;
};

}  // namespace seam::boundary
