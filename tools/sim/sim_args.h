// seam_decoder_sim's command line: seam_plan's flags (--pattern, --tp, --attn-dp, --policy) plus the
// pipeline size, the token batch per DP replica, the activation dtype and the model's sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layouts/batch_facts.h"
#include "seam/dtype.h"

namespace seam::sim {

struct SimArgs {
  std::string pattern = "AF";          ///< one period of the stack (A, F, E, M)
  int layers = 1;                      ///< the stack is `pattern` repeated this many times
  int tp = 1;
  int attn_dp = 1;                     ///< attn_tp = tp / (attn_dp * attn_cp)
  int attn_cp = 1;                     ///< > 1: a DSA/MLA-style prefill-CP batch, equal shards over attention CP
  bool cp_decode = false;              ///< with attn_cp > 1: a decode batch instead, whole on every CP rank
  bool gqa_cp = false;                 ///< with attn_cp > 1: GQA prefill CP (the MoE gathers over MoE-CP), not DSA/MLA
  std::vector<int64_t> cp_shards;      ///< with gqa_cp: each CP rank's rows of its replica (uneven shards)
  int pp = 1;
  int moe_ep = 0;                      ///< expert parallel size (0 = tp); MoE-TP = tp / moe_ep
  int dense_tp = 0;                    ///< dense FFN TP size: 1 (fully DP, on this rank's rows) or tp (0 = tp)
  std::string policy = "auto";         ///< ar | rs | rsv | rs+rsv | auto
  std::vector<int64_t> tokens = {5};   ///< real tokens per DP replica (one entry per replica; 0 = idle)
  std::string padding = "auto";        ///< max | sum | auto (the reference's choice for a decode batch)
  DType dtype = DType::f32;
  int64_t hidden = 64;
  uint64_t seed = 1;
  bool dp_gatherv = false;             ///< SUM_LEN DP gathers as one all_gatherv (Topology::dp_gatherv)
  bool input_scattered = false;        ///< attention input on attention-TP slices (INPUT_SCATTERED batches)
  int microbatches = 1;                ///< 2: two-batch overlap (each microbatch on its own stream and runners)
  bool capture = false;                ///< every attention prepare captures its updated residual (checked too)
  bool fusion = true;                  ///< offer Seam's host fused all-reduce + add + RMSNorm candidate
  bool quiet = false;                  ///< print only the verdict
  bool cuda = false;                   ///< --device cuda: the boundaries on this rank's GPU
  std::string fault;                   ///< --inject-fault: "", scale, drop or twice (tests only)

  /// The stack's stage letters (pattern x layers).
  std::string stages() const;
  /// The padding mode for this batch.
  PaddingMode padding_mode() const;
};

/// Parses argv; throws ValueError on an unknown flag or a bad value. Prints usage and exits on -h.
SimArgs parse_sim_args(int argc, char** argv);

}  // namespace seam::sim
