// A view of some of a group's ranks as a group of their own: the two views of a call the
// two-level (hierarchical) schedules run on.
#pragma once

#include <cstdint>

#include <string_view>
#include <vector>

#include "runtime/collectives/group.h"

namespace seam::collectives {

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
  ShmBackend* shm() const override { return parent_.shm(); }
  bool sent_unreceived(int peer, uint32_t step) override {
    return parent_.sent_unreceived(ranks_[static_cast<size_t>(peer)], step);
  }

 private:
  Group& parent_;
  std::vector<int> ranks_;
  int rank_;
  std::string_view transport_;
};

}  // namespace seam::collectives
