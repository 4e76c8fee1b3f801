#include <cstdint>
#include "layouts/batch_facts.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "seam/errors.h"

namespace seam {

std::string_view batch_variant_name(BatchVariant variant) {
  switch (variant) {
    case BatchVariant::ORDINARY: return "ORDINARY";
    case BatchVariant::CONTEXT_PARALLEL: return "CONTEXT_PARALLEL";
    case BatchVariant::INPUT_SCATTERED: return "INPUT_SCATTERED";
    case BatchVariant::SEQUENCE_PARALLEL: return "SEQUENCE_PARALLEL";
  }
  return "?";
}

BatchVariant select_batch_variant(const ActiveBatchFlags& flags) {
  if (flags.sp_active) return BatchVariant::SEQUENCE_PARALLEL;
  if (flags.input_scattered) return BatchVariant::INPUT_SCATTERED;
  if (flags.shards_over_cp) return BatchVariant::CONTEXT_PARALLEL;
  return BatchVariant::ORDINARY;
}

PaddingMode choose_padding_mode(std::span<const int64_t> tokens_per_dp, bool is_extend,
                                bool backend_forces_max_len) {
  if (backend_forces_max_len) return PaddingMode::MAX_LEN;
  const auto width = static_cast<int64_t>(tokens_per_dp.size());
  if (is_extend && width > 1) return PaddingMode::SUM_LEN;
  const int64_t sum = std::accumulate(tokens_per_dp.begin(), tokens_per_dp.end(), int64_t{0});
  const int64_t max = tokens_per_dp.empty() ? 0 : *std::max_element(tokens_per_dp.begin(), tokens_per_dp.end());
  return 2 * sum >= max * width ? PaddingMode::MAX_LEN : PaddingMode::SUM_LEN;
}

BatchFacts BatchFacts::make(std::span<const int64_t> tokens_per_dp, int dp_rank, int row_multiple,
                            PaddingMode mode, BatchVariant variant) {
  if (tokens_per_dp.empty() || dp_rank < 0 || dp_rank >= static_cast<int>(tokens_per_dp.size()))
    throw ValueError("batch facts need a token count for every DP replica and a valid DP rank");
  if (row_multiple < 1) throw ValueError("batch row multiple must be positive");
  BatchFacts f;
  f.tokens_per_dp_.assign(tokens_per_dp.begin(), tokens_per_dp.end());
  f.rows_per_dp_.reserve(tokens_per_dp.size());
  for (int64_t n : tokens_per_dp) {
    if (n < 0) throw ValueError("token counts must not be negative");
    f.rows_per_dp_.push_back((n + row_multiple - 1) / row_multiple * row_multiple);
  }
  if (mode == PaddingMode::MAX_LEN) {
    const int64_t max = *std::max_element(f.rows_per_dp_.begin(), f.rows_per_dp_.end());
    std::fill(f.rows_per_dp_.begin(), f.rows_per_dp_.end(), max);
  }
  f.offsets_.resize(f.rows_per_dp_.size());
  std::exclusive_scan(f.rows_per_dp_.begin(), f.rows_per_dp_.end(), f.offsets_.begin(), int64_t{0});
  f.global_rows_ = f.offsets_.back() + f.rows_per_dp_.back();
  f.dp_rank_ = dp_rank;
  f.padding_ = mode;
  f.variant_ = variant;
  return f;
}

BatchFacts BatchFacts::with_cp_shards(std::span<const int64_t> rows_per_cp_rank, int attn_cp) const {
  BatchFacts f = *this;
  if (rows_per_cp_rank.empty()) return f;
  if (static_cast<int>(rows_per_cp_rank.size()) != attn_cp)
    throw ValueError("CP shard rows need one count per attention-CP rank (" + std::to_string(attn_cp) + "), got " +
                     std::to_string(rows_per_cp_rank.size()));
  int64_t total = 0;
  for (int64_t n : rows_per_cp_rank) {
    if (n < 0) throw ValueError("CP shard rows must not be negative");
    total += n;
  }
  if (total > local_rows())
    throw ValueError("CP shards of " + std::to_string(total) + " rows do not fit their replica's " +
                     std::to_string(local_rows()) + " rows");
  f.cp_shard_rows_.assign(rows_per_cp_rank.begin(), rows_per_cp_rank.end());
  return f;
}

}  // namespace seam
