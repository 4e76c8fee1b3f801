// Bound step records: what a consumer's prepare does (EntryStep, §2.7) and what a producer's
// exit does with its output rows (OutputMove, §2.8). Plain enums and flags chosen once at
// construction; execution switches on them, nothing is looked up per forward.
#pragma once

#include <cstdint>

#include <optional>
#include <string>

#include "layouts/layout.h"

namespace seam::boundary {

/// Row movement of the arriving output before the update (and the sum it completes, if owed).
enum class PreMove : uint8_t {
  NONE,
  ATTN_TP_REDUCE_SCATTER,  ///< complete the attention-TP sum onto this rank's slice
  ATTN_TP_SLICE,           ///< take this rank's slice of a complete output (cloned)
  TP_REDUCE_SCATTER,       ///< input-scattered: complete the TP sum onto this rank's slice
  TP_SLICE,                ///< input-scattered: slice a complete output
  CP_REDUCE_SCATTER,       ///< complete the attention-CP sum onto this rank's CP shard
  CP_TAKE_BACK,            ///< take this rank's CP shard back from full-context rows
};

/// Movement of the residual before the update, through the update's own shard operations.
enum class ResidualMove : uint8_t { NONE, ATTN_TP_SLICE, ATTN_TP_GATHER };

/// How the update and the read run.
enum class ReadKind : uint8_t {
  UPDATE_READ,          ///< (complete the owed sum) then update + read on the same rows
  RESIDUAL_JOINS_SUM,   ///< each rank adds its residual slice into its rows of the partial, TP all-reduce, read
  DP_PARTIAL_GATHER,    ///< attn-TP rank 0 adds the residual, DP gather sums the partials, norm on gathered rows
  DP_REPLICATE_GATHER,  ///< complete the sum, update + read on local rows, then DP gather one copy
};

/// Movement of the read input after the read.
enum class InputMove : uint8_t { NONE, ATTN_TP_GATHER, CP_GATHER };

/// One consumer step, bound for one edge, variant and update capability.
struct EntryStep {
  PreMove pre_move = PreMove::NONE;
  ResidualMove residual_move = ResidualMove::NONE;
  std::optional<SumGroup> all_reduce;  ///< the owed sum an all-reduce completes before the update
  ReadKind read = ReadKind::UPDATE_READ;
  InputMove input_move = InputMove::NONE;
  bool enters_stack = false;           ///< run the read's enter on an Initial stream
  bool places_cp_shards = false;       ///< the DP gather also places CP shards
  bool tries_fusions = false;          ///< fused all-reduce+add+norm candidates come before the all-reduce
  bool operator==(const EntryStep&) const = default;
  /// "ATTN_TP all_reduce (fused candidates first), update+read" style one-liner.
  std::string describe() const;
};

/// move_rows of a complete value: gather the axes `from` has beyond `to` (attention TP first, then
/// DP), then cut the axes `to` adds (DP scatter, then attention-TP slice).
struct RowMove {
  Layout from, to;
  bool operator==(const RowMove&) const = default;
  /// Throws NotSupportedError("rows=... to=...") when rows would be both gathered and cut, or CP is involved.
  static RowMove checked(Layout from, Layout to);
};

/// A prepared branch's entry: the source's already-read input and its residual move to the
/// branch's rows; nothing is normalised or updated again.
struct BranchEntry {
  RowMove input;
  RowMove residual;
  bool operator==(const BranchEntry&) const = default;
};

/// What an FFN exit does with its output rows (fixed at construction; DP transport per batch).
enum class OutputMoveKind : uint8_t {
  KEEP,                        ///< output stays on the rows it was computed on
  UPDATE_THEN_ATTN_TP_GATHER,  ///< write the update into the residual slice, gather it to attention rows
  OUTPUT_ON_RESIDUAL_SHARD,    ///< TP reduce-scatter (or slice) onto the residual's slice [+ update, gather]
  CP_TAKE_BACK,                ///< take this rank's CP shard back (after the sum)
  CP_REDUCE_SCATTER,           ///< an attention-CP reduce-scatter completes the sum onto the shard
  DP_CP_TAKE_BACK,             ///< scatter this rank's CP shard of its DP rows
  RETURNS_OVER_DP,             ///< back to this replica's rows: RSv / RS / DP scatter, chosen per batch
};

struct OutputMove {
  OutputMoveKind kind = OutputMoveKind::KEEP;
  bool completes_sum = false;  ///< the move's reduce-scatter completes the output sum
  bool gathers_back = false;   ///< OUTPUT_ON_RESIDUAL_SHARD: update on the slice, then all-gather
  bool operator==(const OutputMove&) const = default;
  /// The exit writes the update into the residual as it moves the rows: the stream leaves written.
  bool writes_stream() const {
    return kind == OutputMoveKind::UPDATE_THEN_ATTN_TP_GATHER ||
           (kind == OutputMoveKind::OUTPUT_ON_RESIDUAL_SHARD && gathers_back);
  }
  std::string describe() const;
};

}  // namespace seam::boundary
