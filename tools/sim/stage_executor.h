// StageExecutor: runs one stage's bound path — the consumer step (§2.7) its prepare selected at
// construction and the exit decision (§2.5) — on the residual stream (runtime/residual) and the row
// moves (runtime/boundary/rows). It is the simulator's stand-in for StageBoundary's execution
// methods (prepare / finish / exit / from_pp), covering the paths the simulator's stacks bind:
// ORDINARY batches, plain ADD updates and norm reads, attention-TP sums, DP gathers (partial and
// replicate), DP returns (scatter, RS, RSv, carried or at the exit), carried sums with the stage's
// fused candidates, and pipeline reception. Anything else raises NotSupportedError naming the step.
#pragma once

#include <functional>
#include <optional>

#include "runtime/boundary/rows/pp_handoff.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/rows/scratch.h"
#include "runtime/boundary/stage.h"
#include "runtime/residual/batch.h"

namespace seam::sim {

class StageExecutor {
 public:
  /// `stage`'s NormRef must be a residual::RmsNorm. Stage, norm and groups must outlive the executor,
  /// which must not move while a forward runs (its completions are referenced by the stream).
  StageExecutor(boundary::StageBoundary& stage, boundary::rows::ProcessGroups& groups);
  StageExecutor(const StageExecutor&) = delete;
  StageExecutor& operator=(const StageExecutor&) = delete;

  boundary::StageBoundary& stage() { return stage_; }

  /// Completes what the arriving output owes, applies its update, reads the compute input and moves
  /// it to the rows compute runs on; the stream becomes Written.
  residual::StageInput prepare(const residual::LayerOutput& h, residual::ForwardBatch& batch);
  /// PARTIAL attention: publishes compute's partial (owing its declared sum) or complete output.
  residual::LayerOutput finish(const Tensor& output, residual::ForwardBatch& batch);
  /// Pipeline reception on the first stage of a partition: rebuilds the stream from what arrived.
  residual::LayerOutput from_pp(const boundary::rows::PipelineTensors& tensors, residual::ForwardBatch& batch);

  /// An FFN or single-stage mixer exit: publishes the decision's flags while alive; finish() applies it.
  class Exit {
   public:
    Exit(StageExecutor& owner, residual::ForwardBatch& batch);
    /// Whether compute must leave its output sum to the boundary.
    bool compute_skips_sum() const;
    residual::LayerOutput finish(const Tensor& output);

   private:
    StageExecutor& owner_;
    residual::ForwardBatch& batch_;
    std::optional<boundary::FfnExit> ffn_;
    std::optional<boundary::MixerExit> mixer_;
  };
  Exit exit(residual::ForwardBatch& batch) { return Exit(*this, batch); }

 private:
  residual::LayerOutput finish_ffn(const boundary::FfnDecision& d, const Tensor& output, residual::ForwardBatch& batch);
  residual::LayerOutput finish_mixer(const boundary::MixerDecision& d, const Tensor& output, residual::ForwardBatch& batch);
  // The output moved back to this replica's rows (dp_step), in this stage's local output buffer.
  Tensor return_over_dp(boundary::DpStep step, const Tensor& global, residual::ForwardBatch& batch);
  Tensor local_output(const Tensor& like, const BatchFacts& facts);
  Tensor gathered_rows(const Tensor& like, const BatchFacts& facts);
  std::optional<residual::StageInput> try_fused(const boundary::BoundPath& path, const residual::Contribution& pending,
                                                residual::ResidualStream& stream, residual::ForwardBatch& batch);

  boundary::StageBoundary& stage_;
  boundary::rows::ProcessGroups& groups_;
  residual::RmsNorm& norm_;
  const residual::StageRead& read_;
  boundary::rows::Scratch scratch_;
  Buffer gathered_;      ///< the compute input on DP-gathered rows
  Buffer local_output_;  ///< an output returned to this replica's rows

  // Completions the stream references (FunctionRef): they live as long as the executor.
  std::optional<SumGroup> carried_group_;
  boundary::DpStep deferred_step_ = boundary::DpStep::NONE;
  std::function<Tensor(const Tensor&, residual::ForwardBatch&)> all_reduce_declared_;
  std::function<Tensor(const Tensor&, residual::ForwardBatch&)> all_reduce_carried_;
  std::function<Tensor(const Tensor&, residual::ForwardBatch&)> all_reduce_then_scatter_;
  std::function<Tensor(const Tensor&, residual::ForwardBatch&)> deferred_dp_step_;
  std::optional<SumGroup> declared_group_;
};

}  // namespace seam::sim
