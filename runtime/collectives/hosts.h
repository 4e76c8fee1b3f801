// How a group's ranks sit on hosts, and the two views of a group the two-level (hierarchical)
// schedules run on: the ranks of this rank's host (shared memory) and, one per host, the ranks
// with this rank's place on its host (the network).
#pragma once

#include <string_view>
#include <vector>

#include "runtime/collectives/group.h"

namespace seam::collectives {

/// Where a group's ranks run, as this rank sees it: how many hosts, ranks per host, and its
/// two views.
struct HostLayout {
  int hosts = 1;
  /// Ranks per host when every host has as many, else 0.
  int per_host = 0;
  /// Host h holds group ranks [h * per_host, (h + 1) * per_host) (mpirun's and torchrun's
  /// default placement).
  bool host_major = false;
  /// Group ranks on this rank's host, in rank order; this rank's place among them.
  std::vector<int> local;
  int local_index = 0;
  /// Group ranks with this rank's place on their host, one per host in host order; this
  /// rank's host's place among them.
  std::vector<int> cross;
  int host_index = 0;
  /// Whether two-level schedules apply: two hosts or more, as many ranks on each, two or more.
  bool two_level() const { return hosts > 1 && per_host > 1; }
};

/// The layout of g's ranks by Group::host_of.
HostLayout host_layout(const Group& g);

/// The ranks `ranks` of a parent group as a group of their own (its rank r is the parent's
/// rank ranks[r]). Its messages are the parent call's: the two views of one call never share
/// a pair of ranks, so their messages never meet. Lives no longer than the parent's call.
class SubGroup final : public Group {
 public:
  SubGroup(Group& parent, std::vector<int> ranks, int rank, std::string_view transport)
      : parent_(parent), ranks_(std::move(ranks)), rank_(rank), transport_(transport) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  int world_rank(int r) const override { return parent_.world_rank(ranks_[static_cast<size_t>(r)]); }
  transport::RequestPtr isend(int peer, uint32_t step, const void* data, size_t bytes) override {
    return parent_.isend(ranks_[static_cast<size_t>(peer)], step, data, bytes);
  }
  transport::RequestPtr irecv(int peer, uint32_t step, void* data, size_t bytes) override {
    return parent_.irecv(ranks_[static_cast<size_t>(peer)], step, data, bytes);
  }
  std::string_view transport_name() const override { return transport_; }
  uint64_t communicator_id() const override { return parent_.communicator_id(); }
  std::chrono::microseconds spin() const override { return parent_.spin(); }
  int host_of(int r) const override { return parent_.host_of(ranks_[static_cast<size_t>(r)]); }

 private:
  Group& parent_;
  std::vector<int> ranks_;
  int rank_;
  std::string_view transport_;
};

}  // namespace seam::collectives
