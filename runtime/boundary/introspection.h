// Plan introspection: every bound path describes itself in one line, e.g.
//   ffn->attn [ORDINARY]: TP reduce_scatterv at next input (deferred)
//   attn->ffn [ORDINARY] input: DP gather (partial, completes ATTN_TP), read
// Exit lines name the collective and where it runs; when the choice depends on the batch's
// padding, both outcomes are shown (MAX_LEN: ...; SUM_LEN: ...).
#pragma once

#include <string>
#include <vector>

#include "runtime/boundary/plan.h"

namespace seam::boundary {

/// What the stage's prepare does for `path` (every bound update capability).
std::string describe_entry(const BoundEntry& entry);
/// What a prepared branch's branch_input moves.
std::string describe(const BranchEntry& branch);
/// What the stage's exit does with its output for `path` (FFN: per padding mode).
std::string describe_exit(const StagePlan& plan, const BoundPath& path);
/// Two lines per bound variant: the input path ("<prev>-><kind> [V] input: ...") and the output
/// path ("<kind>-><next> [V]: ...").
std::vector<std::string> describe_plan(const StagePlan& plan);

}  // namespace seam::boundary
