// ParallelConfig: the parallel configuration of one model replica that the boundary rules read
// (§1.1) — group sizes and the feature switches that change which rows and sums a stage sees.
// Plain data; seam::boundary::Groups checks it (ValueError when the sizes are inconsistent).
#pragma once

namespace seam {

/// One rank's view of the model's parallel layout; every rank of a job passes the same values.
struct ParallelConfig {
  // Group sizes. tp = attn_dp * attn_cp * attn_tp = moe_dp * moe_ep * moe_tp.
  int tp = 1;
  int attn_tp = 1;
  int attn_dp = 1;
  int attn_cp = 1;
  int moe_ep = 1;
  int moe_tp = 1;
  int moe_dp = 1;
  int moe_dense_tp = 0;  ///< configured dense-FFN TP size: 1 (fully DP) or tp; 0 = tp
  int pp = 1;
  int dwdp = 1;          ///< dispatch-with-DP size; > 1 routes MoE tokens on local rows

  // Feature switches the rules read.
  bool enable_prefill_cp = false;           ///< CP extend batches shard tokens over attention CP
  bool cp_over_attn_cp = false;             ///< DSA/MLA CP: equal shards over attention CP, CP RS exists
  bool moe_cp_all_gather = false;           ///< GQA CP: the MoE gathers over the MoE-CP group
  bool attn_tp_input_scattered = false;     ///< --enable-attn-tp-input-scattered
  bool disable_attn_tp_gather = false;       ///< attention-TP ranks keep their own rows (no input gather)
  bool ag_after_qlora = false;              ///< attention gathers its sliced input itself (SGLANG_USE_AG_AFTER_QLORA)
  bool dp_gatherv = false;                  ///< SUM_LEN DP gathers as one all_gatherv where attn_tp 1, tp = attn_dp (SGLANG_DP_USE_GATHERV)
  bool sequence_parallel = false;           ///< LayerNorm-SP configured for this model
  bool moe_a2a_backend = false;             ///< an all-to-all MoE backend (DeepEP, pplx, ...)
  bool fp4_all_gather = false;              ///< flashinfer-cutlass FP4 all-gather MoE path
  bool quantized_comm = false;              ///< quantized MoE communication
  bool lora = false;                        ///< LoRA adapters are active
  bool shared_expert_tp1 = false;           ///< SGLANG_SHARED_EXPERT_TP1
  bool moe_output_complete = false;         ///< the MoE returns complete outputs (a2a combine, megamoe...)
  bool eagle_speculative = false;           ///< EAGLE speculative decoding
  bool two_batch_overlap = false;           ///< two-batch overlap (TBO) is enabled
  int elastic_ep_active_dp = 0;             ///< elastic-EP world gather: active DP ranks (0 = off)

  /// tp = attn_dp * attn_cp * attn_tp with pure MoE-TP (moe_tp = tp); the caller edits the rest.
  static ParallelConfig make(int tp, int attn_dp = 1, int attn_cp = 1) {
    ParallelConfig c;
    c.tp = tp;
    c.attn_dp = attn_dp;
    c.attn_cp = attn_cp;
    // In 64 bits: the product of two int sizes may overflow int (Groups then refuses the sizes).
    c.attn_tp = attn_dp > 0 && attn_cp > 0 ? static_cast<int>(tp / (static_cast<long long>(attn_dp) * attn_cp)) : 0;
    c.moe_tp = tp;
    return c;
  }
};

}  // namespace seam
