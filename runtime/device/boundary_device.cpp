#include "runtime/device/boundary_device.h"

#include <vector>

#include "seam/errors.h"
#include "runtime/device/current_stream.h"
#include "runtime/device/device_fusion.h"
#include "runtime/device/device_kernels.h"
#include "kernels/cuda/peer_sync.h"

namespace seam::device {

namespace {

using boundary::rows::GroupKind;

// One group's row moves on a device communicator, on the caller's current stream. The call's own
// Work is not waited for: the result is ordered on the stream, and a failure aborts the
// communicator (its next call throws, BoundaryDevice::check throws).
class CommGroup final : public boundary::rows::DeviceGroup {
 public:
  explicit CommGroup(std::shared_ptr<DeviceCommunicator> comm) : comm_(std::move(comm)) {}

  comm::Work all_reduce(const Tensor& inout) override {
    comm_->all_reduce(inout.data, inout.data, count(inout), inout.dtype, ReduceOp::sum, current_stream());
    return {};
  }
  comm::Work reduce_scatter(const Tensor& send, const Tensor& recv) override {
    comm_->reduce_scatter(send.data, recv.data, count(recv), send.dtype, ReduceOp::sum, current_stream());
    return {};
  }
  comm::Work reduce_scatterv(const Tensor& send, const Tensor& recv, std::span<const size_t> counts) override {
    comm_->reduce_scatterv(send.data, recv.data, counts, send.dtype, ReduceOp::sum, current_stream());
    return {};
  }
  comm::Work all_gather(const Tensor& send, const Tensor& recv) override {
    comm_->all_gather(send.data, recv.data, count(send), send.dtype, current_stream());
    return {};
  }
  comm::Work all_gatherv(const Tensor& send, const Tensor& recv, std::span<const size_t> counts) override {
    comm_->all_gatherv(send.data, recv.data, counts, send.dtype, current_stream());
    return {};
  }
  comm::Work send(const Tensor& t, int peer) override {
    comm_->send(t.data, count(t), t.dtype, peer, current_stream());
    return {};
  }
  comm::Work recv(const Tensor& t, int peer) override {
    comm_->recv(t.data, count(t), t.dtype, peer, current_stream());
    return {};
  }

 private:
  static size_t count(const Tensor& t) { return static_cast<size_t>(t.numel()); }
  std::shared_ptr<DeviceCommunicator> comm_;
};

}  // namespace

BoundaryDevice::BoundaryDevice(boundary::rows::ProcessGroups& groups, int device) : groups_(groups), device_(device) {}

std::unique_ptr<BoundaryDevice> BoundaryDevice::attach(boundary::rows::ProcessGroups& groups, int device) {
  install_device_kernels();
  std::unique_ptr<BoundaryDevice> b(new BoundaryDevice(groups, device));
  // Every rank creates its groups' device communicators in the same kind order, so that each
  // creation (collective over its group) meets its peers.
  for (int g = 0; g < boundary::rows::kGroupKindCount; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (kind == GroupKind::WORLD || !groups.shared_comm(kind)) continue;
    b->comms_[static_cast<size_t>(g)] = DeviceCommunicator::create(groups.shared_comm(kind), device);
    b->device_ = b->comms_[static_cast<size_t>(g)]->device();
  }
  // The pipeline handoff's device send/recv: the ranks of one TP rank across the stages.
  const Topology& topo = groups.topology();
  if (topo.pp > 1 && topo.pp <= kernels::cuda::kMaxRanks && groups.shared_comm(GroupKind::WORLD)) {
    auto chain = groups.shared_comm(GroupKind::WORLD)->split(groups.tp_rank(), groups.pp_rank());
    b->pipeline_ = DeviceCommunicator::create(chain, device);
    b->device_ = b->pipeline_->device();
  }
  if (b->device_ < 0) cudaGetDevice(&b->device_);
  if (b->pipeline_) groups.set_pipeline_device(std::make_shared<CommGroup>(b->pipeline_));
  for (int g = 0; g < boundary::rows::kGroupKindCount; ++g)
    if (b->comms_[static_cast<size_t>(g)])
      groups.set_device_group(static_cast<GroupKind>(g), std::make_shared<CommGroup>(b->comms_[static_cast<size_t>(g)]));
  return b;
}

BoundaryDevice::~BoundaryDevice() {
  if (pipeline_) groups_.set_pipeline_device(nullptr);
  for (int g = 0; g < boundary::rows::kGroupKindCount; ++g)
    if (comms_[static_cast<size_t>(g)]) groups_.set_device_group(static_cast<GroupKind>(g), nullptr);
}

DeviceCommunicator* BoundaryDevice::communicator(GroupKind group) const { return comms_[static_cast<size_t>(group)].get(); }

void BoundaryDevice::check() const {
  for (const auto& c : comms_)
    if (c) c->check();
  if (pipeline_) pipeline_->check();
}

std::shared_ptr<const boundary::FusionProvider> BoundaryDevice::fusions() const {
  return std::make_shared<DeviceAllReduceNormFusion>(groups_, comms_);
}

}  // namespace seam::device
