// Consumer-side binding (§2.7): which step a stage's prepare runs for one incoming edge —
// chosen once per variant and per arriving update capability, with the prebound variants for an
// already-completed declared sum and for a stream that arrives written.
#pragma once

#include <optional>

#include "layouts/batch_facts.h"
#include "layouts/topology.h"
#include "runtime/boundary/contracts.h"
#include "runtime/boundary/steps.h"

namespace seam::boundary {

/// The CP moves a variant provides: a gather / take-back pair on CP batches, plus an
/// attention-CP reduce-scatter under DSA/MLA CP.
struct CpMoves {
  bool exist = false;
  bool over_attn_cp = false;    ///< DSA/MLA CP: equal shards over the attention-CP group
  bool reduce_scatter = false;
  static CpMoves of(const Topology& topology, BatchVariant variant);
};

/// Selects the consumer step for `edge` (need and residual_to must be set) when the arriving
/// update is (not) a plain add. NotSupportedError for unsupported transitions: "produced=...
/// residual=... need=...", or "produced=... need=..." when the owed sum cannot complete on the
/// needed rows (or a CP gather has no CP moves).
EntryStep select_entry_step(const EdgeDecl& edge, bool adds_plainly, bool enters_stack, const CpMoves& cp);

/// The steps bound for one arriving update capability.
struct EntryPaths {
  EntryStep step;
  std::optional<EntryStep> completed;  ///< the declared sum already completed (capture, PP export)
  std::optional<EntryStep> written;    ///< stack entry on a stream that arrives written: no enter
};

/// The consumer half of one edge for one variant.
struct BoundEntry {
  std::optional<EntryPaths> plain;      ///< for a plain-add update
  std::optional<EntryPaths> non_plain;  ///< for any other update (and a missing residual when both exist)
  std::optional<SumGroup> input_sum;    ///< the sum the input owes by construction
  InputMove input_move = InputMove::NONE;
  bool capture_moves = false;           ///< a capture moves the residual back to the producer's rows
  bool capture_move_allocates = false;  ///< ...and that move gathers (fresh storage)

  /// The paths for the arriving update. Throws UsageError when one capability is bound and a
  /// different one arrives with a residual ("producer update does not match the boundary's capability").
  const EntryPaths& paths_for(bool adds_plainly, bool has_residual) const;
};

/// Binds every capability of `edge`. ValueError when it declares none; NotSupportedError when the
/// capabilities need different input moves or a transition is unsupported.
BoundEntry bind_entry(const EdgeDecl& edge, bool enters_stack, const CpMoves& cp);

}  // namespace seam::boundary
