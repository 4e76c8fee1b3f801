// Topology: the parallel configuration the boundary rules read (§1.1) — group sizes, the
// feature switches that change which rows and sums a stage sees, the rank layout inside the TP
// group (attention-TP innermost, then CP, then DP; MoE-TP innermost, then EP, then MoE-DP) and
// the rank list each SumGroup resolves to. Pure arithmetic, no communication.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "layouts/batch_facts.h"
#include "layouts/layout.h"
#include "seam/parallel.h"

namespace seam {

/// The parallel configuration with the arithmetic the rules derive from it.
struct Topology : ParallelConfig {
  /// Topology with tp = attn_dp * attn_cp * attn_tp and pure MoE-TP; call validate() after edits.
  static Topology make(int tp, int attn_dp = 1, int attn_cp = 1);
  /// Throws ValueError when the sizes are inconsistent.
  void validate() const;

  // --- derived predicates (§1.1) ---
  bool attn_dp_enabled() const { return attn_dp > 1; }
  int dense_tp_size() const { return moe_dense_tp > 0 ? moe_dense_tp : tp; }
  bool dense_ffn_fully_dp() const { return dense_tp_size() == 1; }
  /// Whether a SUM_LEN DP gather runs as one TP all_gatherv of exact per-replica rows (§3.1).
  bool dp_gathers_v() const { return dp_gatherv && attn_dp > 1 && attn_tp == 1 && tp == attn_dp && attn_cp == 1; }
  /// The MoE routes this rank's own token shard ("MoE on local rows").
  bool moe_on_local_rows() const { return moe_a2a_backend || fp4_all_gather || dwdp > 1; }
  bool prefill_cp_shards_tokens() const { return attn_cp > 1 && enable_prefill_cp; }
  bool moe_gathers_over_moe_cp() const { return !moe_on_local_rows() && moe_cp_all_gather && !cp_over_attn_cp; }
  /// Batches whose rows may not divide by attention TP (no G3b UNPADDED variant here).
  bool batches_are_unpadded() const { return attn_tp > 1 && !attn_dp_enabled() && disable_attn_tp_gather; }
  bool input_scattered_configured() const;
  /// The DP RSv applies: DP attention with moe_ep == attn_dp and attention TP 1 (§3.1).
  bool should_use_dp_reduce_scatterv() const;
  bool can_use_dp_reduce_scatter() const;
  bool can_merge_post_experts_all_reduce() const { return moe_ep > 1 && moe_tp > 1 && moe_dp == 1; }
  /// The post-experts sum is exactly one all-reduce over the TP group.
  bool post_experts_sum_is_one_all_reduce() const;
  /// Size of each token axis; CP only shards tokens on a CP batch.
  AxisSizes axis_sizes(bool cp_active) const { return {attn_dp, cp_active ? attn_cp : 1, attn_tp}; }
  /// Which batch variants a stage plan builds paths for (§1.9); ORDINARY always.
  bool builds_variant(BatchVariant v) const;

  // --- rank layout inside the TP group ---
  struct AttnCoords { int dp, cp, tp; };
  struct MoeCoords { int dp, ep, tp; };
  AttnCoords attn_coords(int tp_rank) const;
  MoeCoords moe_coords(int tp_rank) const;
  int tp_rank_of(const AttnCoords& c) const { return (c.dp * attn_cp + c.cp) * attn_tp + c.tp; }

  /// TP-group ranks (in group order) of the attention-TP, attention-CP or attention-DP group of
  /// `tp_rank`, of the EP and MoE-TP groups, and of the whole TP group.
  std::vector<int> attn_tp_ranks(int tp_rank) const;
  std::vector<int> attn_cp_ranks(int tp_rank) const;
  std::vector<int> attn_dp_ranks(int tp_rank) const;
  std::vector<int> moe_ep_ranks(int tp_rank) const;
  std::vector<int> moe_tp_ranks(int tp_rank) const;
  std::vector<int> tp_ranks() const;
  /// Which MoE group the post-experts reduction runs over: EP (pure EP), MoE-TP (pure MoE-TP or
  /// MoE-DP > 1), or the merged TP group (EP x MoE-TP without MoE-DP).
  enum class MoeOutputGroup { EP, MOE_TP, TP };
  MoeOutputGroup post_experts_reduction_group() const;
  /// The TP-group ranks a SumGroup resolves to for `tp_rank`. Throws ValueError for an unknown group.
  std::vector<int> sum_group_ranks(SumGroup group, int tp_rank) const;
  /// Number of ranks in a SumGroup (a sum over one rank is already complete).
  int sum_group_size(SumGroup group) const;
  /// A ranks-to-world map: TP group `pp_rank` occupies world ranks [pp_rank*tp, (pp_rank+1)*tp).
  int world_rank(int pp_rank, int tp_rank) const { return pp_rank * tp + tp_rank; }

  /// "tp=4 attn_tp=2 attn_dp=2 ..." (only non-default switches are named).
  std::string describe() const;
};

}  // namespace seam
