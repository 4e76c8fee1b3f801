// Token layouts and sum groups: which token axes partition a rank's rows (Layout), and over
// which group an unreduced contribution still has to be summed (SumGroup). Rows and sums are
// described separately so a boundary can say both "this output is a partial sum" and "its
// completion must land on these rows". Row counts, padding and order live in BatchFacts.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace seam {

/// A token axis that can partition rows across ranks.
enum class TokenAxis : uint8_t {
  ATTN_DP,          ///< different attention data-parallel replicas hold different token sets
  ATTN_CP,          ///< on an active context-parallel batch, CP ranks hold different partitions
  ATTN_TP_SCATTER,  ///< each attention-TP rank holds a contiguous slice of its DP group's rows
};

/// Size of each token axis for one batch variant (CP only shards tokens on a CP batch).
struct AxisSizes {
  int attn_dp = 1;
  int attn_cp = 1;
  int attn_tp = 1;
  int of(TokenAxis axis) const {
    switch (axis) {
      case TokenAxis::ATTN_DP: return attn_dp;
      case TokenAxis::ATTN_CP: return attn_cp;
      case TokenAxis::ATTN_TP_SCATTER: return attn_tp;
    }
    return 1;
  }
};

/// The set of token axes that partition a rank's rows. Axes of size one are dropped when the
/// layout is built (sharded_over), so two layouts are equal exactly when every rank holds the
/// same tokens. A value type: a bit set, cheap to copy and compare.
class Layout {
 public:
  constexpr Layout() = default;
  /// The layout sharded over `axes`, dropping every axis whose size is one.
  static Layout sharded_over(std::initializer_list<TokenAxis> axes, const AxisSizes& sizes) {
    Layout l;
    for (TokenAxis a : axes)
      if (sizes.of(a) > 1) l.bits_ |= bit(a);
    return l;
  }
  /// A layout from raw axes, no size check (for set arithmetic on already-built layouts).
  static constexpr Layout of(std::initializer_list<TokenAxis> axes) {
    Layout l;
    for (TokenAxis a : axes) l.bits_ |= bit(a);
    return l;
  }

  constexpr bool has(TokenAxis a) const { return (bits_ & bit(a)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  /// True when every axis of this layout is also in `other`.
  constexpr bool subset_of(Layout other) const { return (bits_ & ~other.bits_) == 0; }
  constexpr Layout operator|(Layout o) const { return raw(bits_ | o.bits_); }
  constexpr Layout operator&(Layout o) const { return raw(bits_ & o.bits_); }
  /// Set difference: axes of this layout not in `o`.
  constexpr Layout operator-(Layout o) const { return raw(bits_ & ~o.bits_); }
  constexpr bool operator==(const Layout&) const = default;
  constexpr uint8_t bits() const { return bits_; }

  /// "{ATTN_DP,ATTN_TP_SCATTER}", "{}" for fully replicated rows.
  std::string to_string() const;

 private:
  static constexpr uint8_t bit(TokenAxis a) { return static_cast<uint8_t>(1u << static_cast<unsigned>(a)); }
  static constexpr Layout raw(uint8_t b) {
    Layout l;
    l.bits_ = b;
    return l;
  }
  uint8_t bits_ = 0;
};

std::string_view token_axis_name(TokenAxis axis);

/// A named group an unreduced contribution is summed over; resolved to a concrete group of the
/// communicator only when the sum runs (see Topology::sum_group_ranks).
enum class SumGroup : uint8_t {
  ATTN_TP,     ///< attention tensor-parallel group
  ATTN_CP,     ///< attention context-parallel group
  TP,          ///< the full tensor-parallel group
  MOE_OUTPUT,  ///< the post-experts reduction group (EP, MoE-TP, or the merged TP group)
};

/// "ATTN_TP", "ATTN_CP", "TP", "MOE_OUTPUT".
std::string_view sum_group_name(SumGroup group);
/// A sum that may be absent ("none" when nullopt), for descriptions.
std::string_view sum_group_name(std::optional<SumGroup> group);

}  // namespace seam
