// Attention-DP row moves (§3.1) between a replica's local rows and the global DP buffer: every
// replica's rows back to back, DP-major, each padded after its real tokens (BatchFacts gives the
// padded counts and offsets). `local` holds facts.local_rows() rows, `global` facts.global_rows().
// The moves are short schedules of the runtime's collectives and return when complete.
#pragma once

#include <cstdint>

#include <span>
#include <vector>

#include "layouts/batch_facts.h"
#include "seam/tensor.h"
#include "runtime/boundary/rows/process_groups.h"
#include "runtime/boundary/rows/scratch.h"

namespace seam::boundary::rows {

/// What the local rows of the attention-TP ranks of one replica hold.
enum class DpGatherMode : uint8_t {
  PARTIAL,    ///< partial contributions of an attention-TP sum: the gather completes the sum
  REPLICATE,  ///< identical copies: the gather places one of them
};

/// global := every replica's local rows at its offset.
///  MAX_LEN, attn_tp == 1: TP all-gather of the local rows.
///  MAX_LEN, attn_tp > 1: attention-TP reduce-scatter of the local rows onto chunk attn_tp_rank (in
///    REPLICATE mode attention-TP ranks other than 0 contribute zeros, so rank 0's copy is placed;
///    the reference zeroes their local tensor in place, Seam leaves `local` untouched), then TP
///    all-gather of the chunks (TP rank order is DP-major, attention-TP inner).
///  SUM_LEN, and always under attention CP: zero `global`, writers copy their rows at their offset
///    (PARTIAL: every attention-TP rank; REPLICATE: attention-TP rank 0; CP rank 0 only), TP all-reduce.
///  SUM_LEN under Topology::dp_gathers_v() (attn_tp 1, tp = attn_dp): one TP all_gatherv of each
///    replica's exact rows.
void dp_gather(ProcessGroups& groups, const BatchFacts& facts, const Tensor& local, const Tensor& global,
               DpGatherMode mode, Scratch& scratch);

/// This replica's rows on each attention-CP rank, in CP rank order: the batch's CP shard rows, or
/// equal shards where it names none (DSA/MLA CP). ValueError when those rows do not divide.
std::vector<int64_t> dp_cp_shard_rows(const ProcessGroups& groups, const BatchFacts& facts);

/// DP x CP on a CP batch (§3.1, §3.3): global := every replica's rows, with this CP rank's shard
/// (cp_rows[cp_rank] rows of its replica; cp_rows holds the replica's shard counts in CP rank order)
/// placed at offset(dp) + sum(cp_rows[:cp_rank]) — zero-fill, every CP rank writes its shard
/// (PARTIAL: every attention-TP rank; REPLICATE: attention-TP rank 0), TP all-reduce.
void dp_gather_cp_shards(ProcessGroups& groups, const BatchFacts& facts, const Tensor& shard,
                         std::span<const int64_t> cp_rows, const Tensor& global, DpGatherMode mode);

/// The DP x CP take-back: shard := this CP rank's shard of this replica's rows of `global`, placed
/// as dp_gather_cp_shards places it (rows of `shard` beyond cp_rows[cp_rank] zero-filled).
void dp_cp_take_back(const ProcessGroups& groups, const BatchFacts& facts, const Tensor& global,
                     std::span<const int64_t> cp_rows, const Tensor& shard);

/// local := this replica's rows of `global` (rows beyond them zero-filled).
void dp_scatter(const BatchFacts& facts, const Tensor& global, const Tensor& local);

/// MAX_LEN only: local := this replica's rows of the TP sum of `global` — a TP reduce-scatter
/// straight into `local` when tp == attn_dp, else onto a 1/tp chunk then an attention-TP all-gather.
void dp_reduce_scatter(ProcessGroups& groups, const BatchFacts& facts, const Tensor& global, const Tensor& local,
                       Scratch& scratch);

/// RSv: local := this replica's rows of the TP sum of `global` — one TP reduce_scatterv with the
/// per-replica padded row counts (zero allowed). The reference runs it with attention TP 1 only; with
/// attention TP > 1 each attention-TP rank receives its slice of its replica's rows (the counts are
/// multiples of attn_tp), then an attention-TP all-gather assembles them, as the fixed-size RS does.
/// `scratch` holds the slice on that path (a temporary when null).
void dp_reduce_scatterv(ProcessGroups& groups, const BatchFacts& facts, const Tensor& global, const Tensor& local,
                        Scratch* scratch = nullptr);

}  // namespace seam::boundary::rows
