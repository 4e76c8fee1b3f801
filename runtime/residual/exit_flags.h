// The flags an exit publishes to compute for the duration of its scope (§2.5, §6), and the RAII
// scope that publishes and restores them. ForwardBatch holds the current ExitFlags; compute
// (row-parallel linears, the MoE output reduction) reads them.
#pragma once

namespace seam::residual {

/// What compute may skip because the boundary completes or carries the work.
struct ExitFlags {
  bool fuse_mlp_allreduce = false;  ///< skip the output all-reduce; the boundary completes or carries it
  bool mlp_reduce_scatter = false;  ///< skip the all-reduce; a boundary reduce-scatter completes it
  bool defer_moe_finalize = false;  ///< a MoE may return a HandoffOutput instead of a tensor
  bool skips_reduction = false;     ///< MixerExit's decision (equals its fuse_mlp_allreduce)

  /// Whether compute must leave its output sum unfinished (row-parallel linear, MoE reduction).
  bool compute_skips_sum() const { return fuse_mlp_allreduce || mlp_reduce_scatter; }
  bool operator==(const ExitFlags&) const = default;
};

/// Publishes `flags` into `slot` for its lifetime and restores the previous value when it ends,
/// also when compute throws. Not copyable or movable: one scope, one restore.
class ScopedExitFlags {
 public:
  ScopedExitFlags(ExitFlags& slot, const ExitFlags& flags) : slot_(slot), saved_(slot) { slot_ = flags; }
  ~ScopedExitFlags() { slot_ = saved_; }
  ScopedExitFlags(const ScopedExitFlags&) = delete;
  ScopedExitFlags& operator=(const ScopedExitFlags&) = delete;

 private:
  ExitFlags& slot_;
  ExitFlags saved_;
};

}  // namespace seam::residual
