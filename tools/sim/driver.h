// One forward of a rank's partition, driven exactly as an engine drives its layers: start the
// residual stream (or rebuild it from the previous pipeline stage with from_pp), then per stage
// prepare -> compute -> finish (PARTIAL attention) or exit scope -> compute -> finish, and at the
// end the final norm (last stage) or to_pp + the pipeline send; with two microbatches, split after
// the partition's input, run them interleaved stage by stage on their own streams, and merge before
// the end. Compute completes its own output sum only when the exit's flags do not tell it to skip.
#pragma once

#include <cstdint>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/boundary/rows/pp_handoff.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/runner.h"
#include "runtime/boundary/tbo.h"
#include "runtime/residual/forward_batch.h"
#include "runtime/residual/owned_tensor.h"
#include "tools/sim/model.h"
#include "tools/sim/stack.h"

namespace seam::sim {

/// What an attention prepare's capture_output recorded: the residual stage `stage` reads, on its
/// producer's rows.
struct CapturedResidual {
  int64_t stage = 0;
  residual::OwnedTensor value;
  std::vector<int64_t> token_ids;
};

struct ForwardOutput {
  std::vector<CapturedResidual> captures;  ///< with `capture`: one per attention stage
  bool has_output = false;         ///< only on the last pipeline stage
  std::vector<int64_t> token_ids;  ///< the global token of each output row (-1: padding)
  residual::OwnedTensor output;    ///< the final norm's output, this replica's rows
  residual::OwnedTensor residual;  ///< the residual the final norm read
};

/// How the parallel run cuts each stage kind's work (what the reference sums).
StageShards stage_shards(const Topology& topology);

/// One StageRunner per stage of the partition. A runner's buffers hold the values it hands on for
/// one live stream at a time, so interleaved microbatches need a set each (the plan is shared).
using Runners = std::vector<std::unique_ptr<boundary::StageRunner>>;

/// Binds every stage of the partition to this rank's groups, its norm and the plain residual
/// operations (ADD; NORM_READ or NORM_QUANT_READ as declared).
Runners bind_runners(SimStack& stack, boundary::rows::ProcessGroups& groups);

/// Where two-batch overlap splits this partition. The microbatches start at `stage` (global index):
/// after the first FFN whose handoff rows are TBO_SPLIT (a dense FFN before a sparse one — the dense
/// layers before it run on the whole batch, as an engine runs its first dense layers outside TBO),
/// else at the partition's input; stack.end() when the split lies in a later partition. `move` is
/// §3.6's split move for that stage's input rows; the microbatches merge after the partition's last
/// stage. NotSupportedError where the input or the merged output is not on attention rows with its
/// residual beside it (the simulator splits and merges attention rows only).
struct TboSplit {
  int64_t stage = 0;
  boundary::TboSplitMove move = boundary::TboSplitMove::KEEP;
  std::string description;  ///< "tbo: split before L2 A: layer input {ATTN_DP} -> keep; merge after L3 E"
};
TboSplit tbo_split(SimStack& stack, const Topology& topology, BatchVariant variant);

/// Test-only corruption of one rank's partial, which the comparison must catch: the last shard of
/// the partition's first stage that sums partials scales its partial by 1.01, drops it (zeros) or
/// counts it twice.
enum class Fault { none, scale, drop, twice };

struct ForwardOptions {
  bool capture = false;  ///< every attention stage's prepare also captures its updated residual (§4.4)
  int microbatches = 1;  ///< 2: two-batch overlap — split at tbo_split(), interleave, merge
  Device device{};       ///< where the boundary's tensors live (the model computes on host)
  Fault fault = Fault::none;
};

/// Runs the partition on the batch `batch.facts` describes (this replica's embeddings as input), with
/// one set of runners per microbatch (the whole batch, before the split, uses the first). The
/// output, residual and captures come back in host memory.
ForwardOutput run_forward(const Model& model, SimStack& stack, std::span<Runners> runners,
                          boundary::rows::ProcessGroups& groups, boundary::rows::PipelineHandoff& handoff,
                          residual::ForwardBatch& batch, const ForwardOptions& options = {});

}  // namespace seam::sim
