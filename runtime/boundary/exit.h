// Exit decisions (§2.5): how an FFN or a single-stage mixer completes its output, decided once per
// batch before compute runs. The decision publishes flags to compute for the exit's scope only
// (restored when the scope ends, also on an exception) and carries the matching completion, so
// finish() applies exactly what compute saw.
#pragma once

#include <cstdint>

#include <optional>
#include <string>

#include "layouts/batch_facts.h"
#include "layouts/topology.h"
#include "runtime/boundary/contracts.h"
#include "runtime/residual/exit_flags.h"
#include "runtime/boundary/steps.h"

namespace seam::boundary {

// The flags live with the forward batch that carries them to compute (residual/ sits below boundary/).
using residual::ExitFlags;
using residual::ScopedExitFlags;

class FusionProvider;
class StagePlan;

/// How an output over DP-gathered rows returns to this replica's rows.
enum class DpStep : uint8_t {
  NONE,             ///< the output does not return over DP
  SCATTER,          ///< copy this replica's rows out of the (complete) global buffer
  REDUCE_SCATTER,   ///< TP reduce-scatter (MAX_LEN) completes the sum onto this replica's rows
  REDUCE_SCATTERV,  ///< TP reduce_scatterv with per-replica counts completes the sum
};

/// What finish() does with compute's output.
enum class FfnCompletion : uint8_t {
  COMPLETE_NOW,               ///< transform, output move / DP step, at-producer update, at the exit
  CARRY_SUM,                  ///< hand on the partial as a carried sum over `carried_sum` (next input, fused first)
  CARRY_SUM_THEN_DP_SCATTER,  ///< carried: all-reduce over `carried_sum`, then DP scatter, at the next input
  DEFER_DP_STEP,              ///< carried: the RS / RSv itself runs at the next input
};

/// The batch-independent half of an FFN exit decision, fixed per variant at construction.
struct FfnExitFacts {
  std::optional<SumGroup> group;
  bool returns_over_dp = false;
  bool leaves_for_next_layer = false;
  bool leaves_for_reduce_scatter = false;
  bool leaves_for_reduce_scatterv = false;
  bool output_move_completes_sum = false;
  bool terminal = false;
  bool update_at_producer = false;
  bool input_scattered = false;      ///< the INPUT_SCATTERED variant
  bool multi_rank_tp = false;        ///< tp > 1
  bool dp_attention = false;
  bool rsv_topology = false;         ///< should_use_dp_reduce_scatterv()
  bool rs_topology = false;          ///< can_use_dp_reduce_scatter()
  bool sum_movable = false;          ///< the sum may move to the next layer (static conditions)
  bool sum_is_one_all_reduce = false;///< the post-output sum is a single all-reduce over TP
  bool provider_may_defer = false;   ///< LoRA / TP1-shared-expert: the provider may still allow deferral
  static FfnExitFacts of(const Topology& t, BatchVariant v, const StageDeclaration& decl, const ResolvedStage& stage,
                         const OutputMove& move);
};

/// One batch's FFN exit decision.
struct FfnDecision {
  ExitFlags flags;
  DpStep dp_step = DpStep::NONE;
  FfnCompletion completion = FfnCompletion::COMPLETE_NOW;
  std::optional<SumGroup> group;         ///< the output's sum group (nullopt: complete output)
  std::optional<SumGroup> carried_sum;   ///< the group a carried partial still owes
  std::optional<SumGroup> declared_sum;  ///< recorded with the output for the next input (input-scattered TP)
  bool operator==(const FfnDecision&) const = default;
  /// "TP reduce_scatterv at next input (deferred)" style: which collective, and where it runs.
  std::string describe() const;
};

/// The decision for `batch` (§2.5 steps 1–8). The provider (may be null) is asked
/// can_defer_finalize on every exit and can_defer_all_reduce only for LoRA / TP1-shared FFNs.
FfnDecision decide_ffn_exit(const FfnExitFacts& facts, const BatchFacts& batch, const FusionProvider* fusions,
                            const StagePlan* plan);

/// A single-stage mixer's exit, fixed per variant (it does not depend on the batch).
struct MixerDecision {
  ExitFlags flags;                       ///< fuse_mlp_allreduce == skips_reduction
  bool hands_on = false;                 ///< carried sum to the next mixer's input
  std::optional<SumGroup> carried_sum;
  std::optional<SumGroup> declared_sum;  ///< the sum the next (FFN) input completes by construction
  bool operator==(const MixerDecision&) const = default;
  static MixerDecision of(const Topology& t, BatchVariant v, const StageOutput& output);
};

/// An FFN exit scope: publishes the decision's flags while alive and restores the previous flags
/// when destroyed (also during unwinding). Neither copyable nor movable.
class FfnExit {
 public:
  FfnExit(ExitFlags& slot, const FfnDecision& decision) : decision_(decision), scope_(slot, decision.flags) {}
  const FfnDecision& decision() const { return decision_; }
  const ExitFlags& flags() const { return decision_.flags; }

 private:
  FfnDecision decision_;
  ScopedExitFlags scope_;
};

/// A mixer exit scope (same publish/restore rules); skips_reduction() tells a custom reduction.
class MixerExit {
 public:
  MixerExit(ExitFlags& slot, const MixerDecision& decision) : decision_(decision), scope_(slot, decision.flags) {}
  const MixerDecision& decision() const { return decision_; }
  bool skips_reduction() const { return decision_.flags.skips_reduction; }

 private:
  MixerDecision decision_;
  ScopedExitFlags scope_;
};

}  // namespace seam::boundary
