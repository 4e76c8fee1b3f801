// The `residual` helpers a model calls around its layer stack (§4.3): start and leave the stack,
// complete / fold / replace / snapshot / extend a layer's output, the final norm, and the pipeline
// packaging. Every helper takes the value the previous call returned and checks its identity.
#pragma once

#include "runtime/residual/capture.h"
#include "runtime/residual/forward_batch.h"
#include "runtime/residual/update_read.h"

namespace seam::residual {

/// Starts a fresh (Initial) stream; drops any previous one. Once per stack invocation, on the
/// embedding path (split prefill: only in the segment that runs the first layer).
void start(ForwardBatch& batch);

/// The batch's stream; UsageError "start the layer stack before entering a stage" when absent.
ResidualStream& current(ForwardBatch& batch);

/// Finishes outstanding communication / finalize work; the update stays pending.
LayerOutput complete_output(const LayerOutput& h, ForwardBatch& batch);

/// Completes a plain contribution and folds it into the residual (h + residual), leaving a written
/// stream; returns the written residual. NotSupportedError for a nonlinear update.
LayerOutput fold(const LayerOutput& h, ForwardBatch& batch);

/// Replaces the stream with a written one whose residual is h (compute produced the full residual
/// itself). Discards any pending contribution: fold() first when one may be pending.
LayerOutput written(const Tensor& h, ForwardBatch& batch);

/// Releases the stream at a terminal exit whose output is already written; returns it.
/// UsageError while a contribution is pending.
Tensor take_output(const LayerOutput& h, ForwardBatch& batch);

/// An owned snapshot of output + residual; the main contribution keeps its owed work.
OwnedTensor snapshot(const LayerOutput& h, ForwardBatch& batch);

/// Completes the contribution, then adds `extra` into it once (e.g. deepstack embeddings); the
/// update stays pending.
LayerOutput add_to_output(const LayerOutput& h, ForwardBatch& batch, const Tensor& extra);

/// A fused final finalize + all-reduce + residual add + norm for a producer's handoff (e.g. a
/// deferred MoE finalize); reads the Gemma-form weight of `norm`.
class HandoffNorm {
 public:
  virtual ~HandoffNorm() = default;
  virtual Tensor finalize(const HandoffOutput& handoff, const Tensor& residual, RmsNorm& norm, ForwardBatch& batch) = 0;
};

struct FinalNormOptions {
  Capture capture{};                    ///< receives the updated residual (always borrowed)
  HandoffNorm* handoff_norm = nullptr;  ///< takes a finalize handoff fused
  bool skip_empty = false;              ///< on 0 rows skip the norm kernel (owed work still runs)
};

/// The final norm: completes the output (or hands a handoff to handoff_norm), releases the stream,
/// then applies the residual add + norm; returns the normalised output (the norm's workspace).
Tensor norm(const LayerOutput& h, ForwardBatch& batch, RmsNorm& layernorm, const FinalNormOptions& options = {});

/// What a pipeline stage sends its successor.
struct PpTensors {
  Tensor hidden_states;
  Tensor residual;  ///< empty when the stream had none
  bool has_residual = false;
  bool declared_partial = false;  ///< hidden_states still owes the producer's declared sum
};

/// Packages the stream for the next pipeline stage and releases it. Carried sums and handoffs are
/// completed first; a declared partial is sent raw (preserve_declared) for the receiver's from_pp
/// to complete — do not complete_output() before this.
PpTensors to_pp(const LayerOutput& h, ForwardBatch& batch, bool preserve_declared = true);

/// Rebuilds a stream from a handed-on output (pipeline reception, a microbatch): no residual ->
/// Written(h); otherwise Pending(h with `update`, owing `declared` when given) over `residual`.
LayerOutput arrive(ForwardBatch& batch, const Tensor& h, const Tensor* residual, const StageUpdate& update,
                   const DeclaredSum* declared = nullptr);

/// An exit whose update runs at the producer: writes update(output, residual) as the new residual.
LayerOutput write_at_producer(ForwardBatch& batch, const Tensor& output, const StageUpdate& update);

/// The ordinary local consumer step: completes owed work unfused, applies the pending update and
/// reads (entering the stack from an Initial stream), then writes the new residual. Returns the
/// compute input.
StageInput read_input(const LayerOutput& h, ForwardBatch& batch, const StageRead& read, RmsNorm& norm,
                      const ReadOptions& options = {});

}  // namespace seam::residual
