// The fusion-provider interface (§7): backend-specific fused completions a stage may use, passed
// per stage as an option (give a layer's attention and FFN stages the same provider). The
// boundary asks for candidates once, at construction, and keeps only those that complete the
// owed sum; at run time it tries them in order before its built-in path.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "layouts/batch_facts.h"
#include "layouts/layout.h"
#include "seam/tensor.h"

namespace seam::boundary {

class StagePlan;

/// What a fused read returns: the consumer's input and the new residual.
struct FusedRead {
  Tensor input;
  Tensor residual;
};

/// The arguments a candidate sees: this rank's partial (or carried value), the residual, the batch.
struct FusionArgs {
  Tensor partial;
  Tensor residual;
  const BatchFacts* batch = nullptr;
  const Tensor* post_residual_addition = nullptr;
  /// The sum `partial` owes, as the runner resolved it (the carried or declared group); a
  /// candidate completes this group rather than one it derives itself. Empty: none owed.
  std::optional<SumGroup> group;
};

/// A candidate declines by returning nullopt, and must decline before it modifies an input or
/// starts a collective, so the next candidate (or the built-in path) stays valid.
using FusionRun = std::function<std::optional<FusedRead>(const FusionArgs&)>;

/// Whether an input path leaves the residual it was handed untouched for this batch — it returns
/// fresh residual storage, fallback included (the capture certificate of §4.4). Empty: never.
using ResidualCertificate = std::function<bool(const BatchFacts&)>;

/// A fused sum + residual add + norm for an FFN input that owes `completes` (e.g. ATTN_TP).
struct FusedMlpInput {
  std::string name;
  SumGroup completes = SumGroup::ATTN_TP;
  FusionRun run;
  /// The kernel's certificate; read only when it is the FFN's first candidate.
  ResidualCertificate preserves_residual;
};

/// A fused completion of carried work (an UnreducedOutput or a handoff) at an attention input.
struct CarriedFusion {
  std::string name;
  FusionRun run;
};

/// A backend's fused completions and deferral permissions. Every method has a safe default.
class FusionProvider {
 public:
  virtual ~FusionProvider() = default;
  /// Ordered carried-work candidates for an attention stage's input, before the built-in.
  virtual std::vector<CarriedFusion> attention_input(const StagePlan& plan) const { return {}; }
  /// Ordered fused input candidates for an FFN stage, before the built-in.
  virtual std::vector<FusedMlpInput> ffn_input(const StagePlan& plan) const { return {}; }
  /// Whether this FFN exit may let the MoE return a HandoffOutput (asked on every FFN exit).
  virtual bool can_defer_finalize(const StagePlan& plan, const BatchFacts& batch) const { return false; }
  /// Whether a LoRA / TP1-shared-expert FFN may leave its all-reduce to the next input.
  virtual bool can_defer_all_reduce(const StagePlan& plan, const BatchFacts& batch) const { return false; }
};

}  // namespace seam::boundary
