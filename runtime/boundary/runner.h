// StageRunner: one stage's bound paths executed on this rank — a StageBoundary (the plan) bound
// once to the rank's process groups, the stage's norm and its residual operations. Per forward it
// only switches on the plan's small enums: select the variant's path (an array index), run the
// consumer step (§2.7) on the residual stream (prepare), publish the exit's flags for compute and
// apply the same decision when compute is done (exit / finish, §2.5), return an already reduced
// output to its handoff rows (postprocess), capture the updated residual (§4.4), move a prepared
// branch's input and merge its output (§4.6), rebuild the stream on a pipeline receiver (from_pp).
// The guide's StageBoundary methods live here; StageBoundary itself stays the pure plan.
#pragma once

#include <cstdint>

#include <functional>
#include <memory>
#include <optional>

#include "runtime/boundary/rows/pp_handoff.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/rows/scratch.h"
#include "runtime/boundary/stage.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/branch.h"

namespace seam::boundary {

/// What an attention prepare may capture besides reading its input (§4.4).
struct PrepareOptions {
  residual::ReadOptions read{};
  /// The updated residual this read produces, on the producer's rows; before the read at the
  /// stack's entry or with a post-residual addition. Owned when the move back gathers, or, with no
  /// move, when the following local FFN's input path certifies it leaves the residual untouched
  /// (BoundPath::capture_preserves_residual).
  residual::Capture capture_output{};
  /// The same residual on the attention's compute-input rows (after its input gather): owned after
  /// the attention-TP gather, or unmoved under the same certificate.
  residual::Capture captured_last_layer_outputs{};
};

class StageRunner {
 public:
  /// `norm` is the norm the stage was built with, `read` this stage's input read, `update` the update
  /// its output carries; the read's and update's capabilities must match the declaration's (both
  /// ValueError otherwise). Everything referenced must outlive the runner,
  /// which must not move while a forward runs (the stream references its completions). Its buffers
  /// serve one stream at a time: a call for another live stream while they hold values of the first
  /// (interleaved microbatches) is a UsageError.
  StageRunner(const StageBoundary& stage, rows::ProcessGroups& groups, residual::RmsNorm& norm,
              const residual::StageRead& read, const residual::StageUpdate& update);
  StageRunner(const StageRunner&) = delete;
  StageRunner& operator=(const StageRunner&) = delete;

  const StageBoundary& stage() const { return stage_; }

  /// Completes what the arriving output owes, applies its update, reads the compute input and moves
  /// it to the rows compute runs on; the stream becomes Written. UsageError on a prepared branch.
  residual::StageInput prepare(const residual::LayerOutput& h, residual::ForwardBatch& batch,
                               const residual::ReadOptions& options = {});
  /// prepare() with captures (attention stages only: UsageError on an FFN). A capture completes the
  /// output's owed communication unfused first; the add+norm still runs.
  residual::StageInput prepare(const residual::LayerOutput& h, residual::ForwardBatch& batch,
                               const PrepareOptions& options);

  /// The explicit capture convention: completes dynamic work on the main output, snapshots a
  /// declared sum on a copy; returns the updated handle with the owned snapshot.
  residual::CapturedOutput capture_output(const residual::LayerOutput& h, residual::ForwardBatch& batch,
                                          bool skip_empty = false) {
    return residual::capture_output(h, batch, skip_empty);
  }

  /// A PARTIAL attention publishes compute's output (owing its declared sum). UsageError otherwise
  /// ("use the stage exit scope for an FFN or single-stage mixer").
  residual::LayerOutput finish(const Tensor& output, residual::ForwardBatch& batch);

  /// The exit scope of an FFN or single-stage mixer: its flags are visible to compute (on
  /// batch.exit_flags) while the scope lives; finish() applies the decision compute saw, once.
  class Exit {
   public:
    Exit(StageRunner& runner, residual::ForwardBatch& batch);
    const ExitFlags& flags() const;
    /// Applies the decision to compute's output (a complete tensor or this rank's partial).
    residual::LayerOutput finish(const Tensor& output);
    /// Compute returned a producer handoff; UsageError unless the exit allowed it.
    residual::LayerOutput finish(const residual::HandoffOutput& handoff);

   private:
    StageRunner& runner_;
    residual::ForwardBatch& batch_;
    std::optional<FfnExit> ffn_;
    std::optional<MixerExit> mixer_;
    bool finished_ = false;
  };
  Exit exit(residual::ForwardBatch& batch) { return Exit(*this, batch); }

  /// An FFN that ran without an exit scope (operation-scheduled TBO): its output is complete;
  /// moves it back to the layer's handoff rows (a plain scatter under DP) and leaves nothing owed.
  residual::LayerOutput postprocess(const Tensor& output, residual::ForwardBatch& batch);

  /// A prepared branch's entry: moves the input its source stage already read (`source_input`) and
  /// the residual to this stage's rows and forks a written stream — no second update or norm.
  /// Returns this stage's compute input. UsageError unless the stream holds a prepared input.
  /// The three branch methods move ordinary batches' rows only: NotSupportedError("branch
  /// transport requires ordinary batch rows") for any other active variant.
  Tensor branch_input(const Tensor& source_input, residual::ForwardBatch& batch);
  /// Moves a branch stage's complete output to the rows it hands on.
  Tensor branch_output(const Tensor& output, residual::ForwardBatch& batch);
  /// Merges `source`'s pending output h into `contribution` (this branch's complete output on its
  /// handoff rows): output and residual move to these rows, the residual is written, and the sum
  /// is left with the source's update, so the residual is added exactly once.
  residual::LayerOutput merge_branch(const Tensor& contribution, const residual::LayerOutput& h,
                                     const StageRunner& source, residual::ForwardBatch& batch);

  /// Pipeline reception on a partition's first stage: rebuilds the stream from what arrived,
  /// re-declaring the input's sum only when the sender kept it raw (tensors.declared_partial).
  /// Where the previous stage leaves its stream written (BoundPath::arrives_written) the hidden
  /// states are the written residual and any residual sent is ignored; otherwise the residual must
  /// arrive (ValueError) unless `allow_missing_residual`, which reads the hidden states as a
  /// written stream.
  residual::LayerOutput from_pp(const rows::PipelineTensors& tensors, residual::ForwardBatch& batch,
                                const residual::StageUpdate& arriving_update, bool allow_missing_residual = false);

 private:
  // prepare's parts
  /// Stack entry on an input-scattered batch: the raw embedding is a partial owing the entry's
  /// declared TP sum, recorded on the stream (in `entered`) before anything consumes it.
  /// Returns the output to consume: `entered`, or `h` when nothing is owed.
  const residual::LayerOutput& enter_stack(const residual::LayerOutput& h, residual::ResidualStream& stream,
                                           const BoundPath& path, residual::LayerOutput& entered);
  const EntryPaths& select_paths(const BoundPath& path, residual::ResidualStream& stream);
  residual::StageInput run_step(const EntryStep& step, const BoundPath& path, residual::ResidualStream& stream,
                                const residual::LayerOutput& h, residual::ForwardBatch& batch,
                                const residual::ReadOptions& options);
  Tensor move_before_update(PreMove move, const Tensor& value, const BatchFacts& facts);
  Tensor move_residual(ResidualMove move, const Tensor& residual);
  residual::StageInput move_input(InputMove move, const residual::StageInput& input, const BatchFacts& facts);
  /// This CP rank's shard of full-context rows (equal shards, or the batch's uneven shard rows).
  Tensor cp_take_back(const Tensor& full, const BatchFacts& facts, rows::Scratch& out);
  // exit's parts
  residual::LayerOutput finish_ffn(const FfnDecision& d, const Tensor& output, residual::ForwardBatch& batch);
  residual::LayerOutput finish_mixer(const MixerDecision& d, const Tensor& output, residual::ForwardBatch& batch);
  Tensor return_over_dp(DpStep step, const Tensor& global, const BatchFacts& facts);
  /// move_rows of a complete value (§3.4): gather attention TP, gather DP; cut DP, cut attention TP.
  /// Returns `value` itself when the layouts match, else rows in `out`.
  Tensor move_rows(const Tensor& value, Layout from, Layout to, const BatchFacts& facts, rows::Scratch& out);
  residual::LayerOutput leave_complete(const Tensor& value, residual::ForwardBatch& batch);
  residual::DeclaredSum declared(SumGroup group);
  /// Held while a call may use the scratch buffers for `batch`'s stream: UsageError when they still
  /// hold another live stream's values (interleaved microbatches sharing this runner); afterwards
  /// the stream owns them if the call used any.
  class ScratchClaim {
   public:
    ScratchClaim(StageRunner& runner, residual::ForwardBatch& batch);
    ~ScratchClaim();
    ScratchClaim(const ScratchClaim&) = delete;
    ScratchClaim& operator=(const ScratchClaim&) = delete;

   private:
    StageRunner& runner_;
    std::shared_ptr<const int> stream_;
    uint64_t uses_before_;
  };
  uint64_t scratch_uses() const;
  residual::CompleteSum& all_reduce_of(SumGroup group) { return all_reduce_refs_[static_cast<size_t>(group)]; }

  const StageBoundary& stage_;
  rows::ProcessGroups& groups_;
  residual::RmsNorm& norm_;
  const residual::StageRead& read_;
  const residual::StageUpdate& update_;
  rows::Scratch scratch_;
  rows::Scratch pre_moved_;   ///< input moved before the update (slice, reduce-scatter, take-back)
  rows::Scratch residual_;    ///< a residual gathered or sliced for the read
  rows::Scratch gathered_;    ///< the compute input moved after the read (DP / TP / CP gather)
  rows::Scratch gathered_scales_;  ///< a quantised input's per-token scales, gathered with it
  rows::Scratch local_;       ///< an output returned to this replica's rows
  rows::Scratch captured_;    ///< a capture moved back to the producer's rows
  /// captured_last_layer_outputs after the attention-TP gather. Not captured_: one prepare may
  /// gather both captures (§2.7 C1: an attention after an attention on an input-scattered batch)
  /// and hands both out owned (§4.4), so each needs storage the other never writes.
  rows::Scratch captured_gathered_;
  rows::Scratch branch_;      ///< a branch input / residual / output on this stage's rows
  rows::Scratch branch_residual_;
  residual::Storage capture_workspace_;  ///< output + residual for a capture before the read
  std::weak_ptr<const int> scratch_owner_;  ///< the stream whose values the scratch buffers may hold

  // Completions the stream references by FunctionRef: they live as long as the runner.
  using Completion = std::function<Tensor(const Tensor&, residual::ForwardBatch&)>;
  std::array<Completion, 4> all_reduce_;  ///< per SumGroup: in-place all-reduce over its group
  std::array<residual::CompleteSum, 4> all_reduce_refs_;
  Completion carried_then_scatter_;       ///< all-reduce the global buffer, then DP scatter
  Completion deferred_reduce_scatter_;    ///< an RS the exit chose, run at the next input
  Completion deferred_reduce_scatterv_;   ///< an RSv the exit chose, run at the next input
  residual::CompleteSum carried_then_scatter_ref_, deferred_reduce_scatter_ref_, deferred_reduce_scatterv_ref_;
};

}  // namespace seam::boundary
