// ProcessGroups: the communicators one rank's boundaries run on, built once from the world
// communicator and a Topology — attention TP, attention DP, attention CP, the full TP group, the
// MoE output group — plus this rank's pipeline neighbours. World rank = pp_rank * tp + tp_rank
// (Topology::world_rank); inside a TP group the ranks follow the Topology's layout (attention-TP
// innermost, then CP, then DP). A group of one rank has no communicator: moves over it are local.
#pragma once

#include <array>
#include <memory>

#include "layouts/layout.h"
#include "layouts/topology.h"
#include "runtime/boundary/rows/device_group.h"
#include "runtime/boundary/rows/traffic.h"
#include "seam/communicator.h"

namespace seam::boundary::rows {

class ProcessGroups {
 public:
  /// Builds every group for the calling rank. Collective over the whole world (every rank calls it,
  /// with the same topology); the world must hold tp * pp ranks.
  ProcessGroups(std::shared_ptr<comm::Communicator> world, const Topology& topology);
  /// A single-rank world (tp = pp = 1): every group has one rank, nothing communicates.
  explicit ProcessGroups(const Topology& topology);

  const Topology& topology() const { return topology_; }
  int pp_rank() const { return pp_rank_; }
  int tp_rank() const { return tp_rank_; }
  const Topology::AttnCoords& attn() const { return attn_; }

  /// The communicator of `group` (null when the group has one rank).
  comm::Communicator* comm(GroupKind group) const { return comms_[static_cast<size_t>(group)].get(); }
  /// The device-memory collectives of `group` (null until seam::cuda attached them, and for a group
  /// of one rank).
  DeviceGroup* device_group(GroupKind group) const { return device_groups_[static_cast<size_t>(group)].get(); }
  /// Sets (or with null, removes) `group`'s device collectives.
  void set_device_group(GroupKind group, std::shared_ptr<DeviceGroup> device) {
    device_groups_[static_cast<size_t>(group)] = std::move(device);
  }
  /// Device send/recv between the pipeline stages (group rank = pp rank, one group per TP rank):
  /// null until seam::cuda attached it, and with one stage. The handoff moves device rows on it.
  DeviceGroup* pipeline_device() const { return pipeline_device_.get(); }
  void set_pipeline_device(std::shared_ptr<DeviceGroup> device) { pipeline_device_ = std::move(device); }
  /// The communicator of `group`, shared (null when the group has one rank).
  const std::shared_ptr<comm::Communicator>& shared_comm(GroupKind group) const {
    return comms_[static_cast<size_t>(group)];
  }
  /// Number of ranks in `group`.
  int size(GroupKind group) const { return sizes_[static_cast<size_t>(group)]; }
  /// This rank's position in `group`.
  int rank_in(GroupKind group) const { return ranks_[static_cast<size_t>(group)]; }

  /// World ranks of the previous / next pipeline stage's rank with the same TP rank (-1 at the ends).
  int previous_stage() const { return pp_rank_ > 0 ? topology_.world_rank(pp_rank_ - 1, tp_rank_) : -1; }
  int next_stage() const { return pp_rank_ + 1 < topology_.pp ? topology_.world_rank(pp_rank_ + 1, tp_rank_) : -1; }

  /// What the moves on these groups executed.
  Traffic& traffic() { return traffic_; }
  const Traffic& traffic() const { return traffic_; }

 private:
  void build(GroupKind kind, const std::vector<int>& tp_ranks);

  Topology topology_;
  int pp_rank_ = 0;
  int tp_rank_ = 0;
  Topology::AttnCoords attn_{0, 0, 0};
  std::shared_ptr<comm::Communicator> world_;
  std::array<std::shared_ptr<comm::Communicator>, kGroupKindCount> comms_{};
  std::array<std::shared_ptr<DeviceGroup>, kGroupKindCount> device_groups_{};
  std::shared_ptr<DeviceGroup> pipeline_device_;
  std::array<int, kGroupKindCount> sizes_{};
  std::array<int, kGroupKindCount> ranks_{};
  Traffic traffic_;
};

/// The communicator kind a SumGroup resolves to.
GroupKind group_of(SumGroup group);

}  // namespace seam::boundary::rows
