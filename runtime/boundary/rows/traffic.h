// Traffic: what the boundary's row moves executed on each group — calls and bytes per
// (group, collective) — so a tool can print the collectives a forward ran and what they moved.
// Counting is a pair of adds into a fixed table; nothing allocates per call.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seam::boundary::rows {

/// The communicator a collective runs on.
enum class GroupKind : uint8_t { ATTN_TP, ATTN_DP, ATTN_CP, TP, MOE_OUTPUT, WORLD };
inline constexpr int kGroupKindCount = 6;
/// "ATTN_TP", "ATTN_DP", "ATTN_CP", "TP", "MOE_OUTPUT", "WORLD".
std::string_view group_kind_name(GroupKind group);

/// The collective (or point-to-point operation) counted.
/// fused_all_reduce_norm: one fused all-reduce + residual add + RMSNorm call (a device fusion).
enum class CollectiveKind : uint8_t {
  all_reduce, reduce_scatter, reduce_scatterv, all_gather, send, recv, fused_all_reduce_norm, all_gatherv
};
inline constexpr int kCollectiveKindCount = 8;
std::string_view collective_kind_name(CollectiveKind kind);

class Traffic {
 public:
  struct Count {
    uint64_t calls = 0;
    uint64_t bytes = 0;  ///< this rank's payload: the larger of its send and receive buffers
  };
  void record(GroupKind group, CollectiveKind kind, size_t bytes) {
    Count& c = counts_[static_cast<size_t>(group)][static_cast<size_t>(kind)];
    ++c.calls;
    c.bytes += bytes;
  }
  const Count& count(GroupKind group, CollectiveKind kind) const {
    return counts_[static_cast<size_t>(group)][static_cast<size_t>(kind)];
  }
  /// The sum over every group and collective.
  Count total() const;
  void reset() { counts_ = {}; }
  /// One line per non-zero entry: "TP reduce_scatterv: 3 calls, 1536 bytes".
  std::vector<std::string> describe() const;

 private:
  std::array<std::array<Count, kCollectiveKindCount>, kGroupKindCount> counts_{};
};

}  // namespace seam::boundary::rows
