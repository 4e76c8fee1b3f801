// Resolved contracts (§1.8): a declaration after topology, policy and batch variant are applied.
// StageInput is what a consumer needs, StageOutput what a producer hands on (permissions fixed
// at construction, not a record of one output), EdgeDecl the two sides of one boundary plus the
// residual's placement on either side of it.
#pragma once

#include <optional>
#include <string>

#include "layouts/layout.h"
#include "runtime/boundary/declaration.h"

namespace seam::boundary {

/// The rows a consumer's compute needs.
struct StageInput {
  Layout layout;          ///< rows compute runs on
  Layout gathers_itself;  ///< axes compute gathers itself (the boundary may hand input still sharded over them)
  ReadFacts read;
  bool operator==(const StageInput&) const = default;
};

/// What a producer's output owes and may leave to others.
struct StageOutput {
  Layout layout;                          ///< rows of the contribution
  std::optional<SumGroup> group;          ///< sum still owed (nullopt: complete)
  bool always_leaves = false;             ///< sum always handed to the next input as a declared sum
  bool leaves_for_next_layer = false;     ///< an exit may carry the sum to the next input
  bool leaves_for_reduce_scatter = false; ///< a fixed-size RS chosen by the boundary may complete it
  bool leaves_for_reduce_scatterv = false;///< the variable-size DP RSv may complete it
  std::optional<UpdateFacts> update;      ///< nullopt on an arrival: the actual update travels with the stream
  std::optional<OutputTransform> transform;
  /// The sum a consumer completes by construction (declared), if any.
  std::optional<SumGroup> declared_sum() const { return always_leaves ? group : std::nullopt; }
  bool operator==(const StageOutput&) const = default;
};

/// One stage resolved for one batch variant (the reference's StageDecl plus its row facts).
struct ResolvedStage {
  StageInput input;
  StageOutput output;
  Layout residual;   ///< residual rows while the stage runs
  Layout handed_on;  ///< rows the stage's output leaves on
};

/// Which update kinds may arrive at an edge (plain add, non-plain), bound one path each.
struct UpdateCapabilities {
  bool plain = false;
  bool non_plain = false;
  bool empty() const { return !plain && !non_plain; }
  bool operator==(const UpdateCapabilities&) const = default;
};

/// One boundary: the producer's arriving output, the residual before it, and — when the consumer
/// is known — its need and the residual rows while it runs.
struct EdgeDecl {
  StageOutput produced;                 ///< as seen arriving (update nullopt)
  Layout residual;                      ///< residual rows before the boundary
  std::optional<StageInput> need;       ///< nullopt when the consumer is not described
  std::optional<Layout> residual_to;    ///< residual rows while the consumer runs
  bool residual_joins_sum = false;      ///< one rank may add the residual into the partial before the sum
  UpdateCapabilities capabilities;
  bool operator==(const EdgeDecl&) const = default;
  /// The producer's half (what arrives and where the residual is): what two independently built
  /// neighbours must agree on even when one of them does not describe the other's side.
  bool same_producer_half(const EdgeDecl& o) const { return produced == o.produced && residual == o.residual; }
};

/// "produced={ATTN_DP} owes ATTN_TP (declared) residual={ATTN_DP}" style text for errors and plans.
std::string describe(const StageOutput& output);
std::string describe(const EdgeDecl& edge);

}  // namespace seam::boundary
