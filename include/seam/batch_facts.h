// BatchFacts: the per-forward facts a boundary reads to pick and run its bound path — the token
// count of every attention-DP replica (rounded so attention-TP and CP moves divide), the padding
// mode of the global DP buffer (MAX_LEN / SUM_LEN), this replica's offset in it, and the active
// batch variant. An engine builds them once per forward, before the first boundary
// (seam::boundary::Groups::batch builds them for its topology).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace seam {

/// How the DP-gathered ("global DP buffer") rows are padded.
enum class PaddingMode : uint8_t {
  MAX_LEN,  ///< every replica padded to the largest count: buffer = max x n_dp
  SUM_LEN,  ///< replicas packed back to back: buffer = sum of counts
};

/// The row regime of a forward. StagePlan binds a path per variant it supports; a forward whose
/// active variant has no bound path fails (never falls back to ORDINARY rows).
enum class BatchVariant : uint8_t {
  ORDINARY,
  CONTEXT_PARALLEL,    ///< a CP extend batch: CP ranks hold different token partitions
  INPUT_SCATTERED,     ///< attention input arrives on attention-TP slices
  SEQUENCE_PARALLEL,   ///< inside a LayerNorm sequence-parallel region (prefill)
};
inline constexpr int kBatchVariantCount = 4;

/// "ORDINARY", "CONTEXT_PARALLEL", "INPUT_SCATTERED", "SEQUENCE_PARALLEL".
std::string_view batch_variant_name(BatchVariant variant);

/// What the runtime knows about the current batch when it selects a variant (§1.9).
struct ActiveBatchFlags {
  bool sp_active = false;         ///< inside an open LayerNorm-SP region
  bool input_scattered = false;   ///< the attention-TP context says the input is scattered
  bool shards_over_cp = false;    ///< a CP extend batch whose rows are sharded over CP
};
/// First match of: SP, INPUT_SCATTERED, CONTEXT_PARALLEL, else ORDINARY.
BatchVariant select_batch_variant(const ActiveBatchFlags& flags);

/// The padding mode the reference picks (§3.1): a forcing a2a backend -> MAX_LEN; an extend batch
/// gathered over more than one replica -> SUM_LEN; otherwise MAX_LEN when 2*sum >= max*width.
PaddingMode choose_padding_mode(std::span<const int64_t> tokens_per_dp, bool is_extend,
                                bool backend_forces_max_len);

/// Token rows of every attention-DP replica and where each sits in the global DP buffer.
class BatchFacts {
 public:
  /// No replicas (an empty forward); use make().
  BatchFacts() = default;
  /// tokens_per_dp[i]: real tokens of DP replica i. Each count is rounded up to a multiple of
  /// `row_multiple` (attn_tp_size, times the CP alignment), then MAX_LEN replaces every entry by
  /// the largest. dp_rank: this rank's replica.
  static BatchFacts make(std::span<const int64_t> tokens_per_dp, int dp_rank, int row_multiple,
                         PaddingMode mode, BatchVariant variant = BatchVariant::ORDINARY);

  /// The padding mode and the active variant.
  PaddingMode padding() const { return padding_; }
  BatchVariant variant() const { return variant_; }
  /// This rank's replica, and the number of attention-DP replicas.
  int dp_rank() const { return dp_rank_; }
  int dp_size() const { return static_cast<int>(rows_per_dp_.size()); }
  /// Real (unpadded) tokens of replica i.
  int64_t tokens(int dp) const { return tokens_per_dp_[dp]; }
  /// Padded rows of replica i in the global buffer (the RSv sizes).
  int64_t rows(int dp) const { return rows_per_dp_[dp]; }
  /// Padded rows of every replica.
  std::span<const int64_t> rows_per_dp() const { return rows_per_dp_; }
  /// Padded rows of this rank's replica (its local buffer).
  int64_t local_rows() const { return rows_per_dp_[dp_rank_]; }
  /// First row of replica i in the global buffer (exclusive prefix sum of padded rows).
  int64_t offset(int dp) const { return offsets_[dp]; }
  /// Rows of the global DP buffer: max*n_dp (MAX_LEN) or the sum (SUM_LEN).
  int64_t global_rows() const { return global_rows_; }
  /// Whether the FFN has any rows: decided from every replica alike under attention DP.
  bool has_tokens() const { return global_rows_ > 0; }

  /// A CP batch whose shards differ in length (GQA zig-zag prefill CP): this replica's rows on each
  /// CP rank, in CP rank order. Equal shards (DSA/MLA CP) need none (an empty span). ValueError
  /// unless there is one count per attention-CP rank and together they fit the replica's rows.
  BatchFacts with_cp_shards(std::span<const int64_t> rows_per_cp_rank, int attn_cp) const;
  /// Per-CP-rank shard rows (empty: equal shards).
  std::span<const int64_t> cp_shard_rows() const { return cp_shard_rows_; }

 private:
  std::vector<int64_t> tokens_per_dp_;
  std::vector<int64_t> rows_per_dp_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> cp_shard_rows_;
  int64_t global_rows_ = 0;
  int dp_rank_ = 0;
  PaddingMode padding_ = PaddingMode::MAX_LEN;
  BatchVariant variant_ = BatchVariant::ORDINARY;
};

}  // namespace seam
