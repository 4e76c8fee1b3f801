#include "seam/device_communicator.h"

#include "kernels/cuda/peer_sync.h"
#include "runtime/device/device_comm_impl.h"
#include "runtime/device/device_kernels.h"

namespace seam::device {

std::shared_ptr<DeviceCommunicator> DeviceCommunicator::create(std::shared_ptr<comm::Communicator> host, int device) {
  install_device_kernels();
  return std::make_shared<DeviceCommunicator>(std::make_unique<DeviceCommunicatorImpl>(std::move(host), device));
}

DeviceCommunicator::DeviceCommunicator(std::unique_ptr<DeviceCommunicatorImpl> impl) : impl_(std::move(impl)) {}
DeviceCommunicator::~DeviceCommunicator() = default;

int DeviceCommunicator::rank() const { return impl_->rank; }
int DeviceCommunicator::size() const { return impl_->size; }
int DeviceCommunicator::device() const { return impl_->device; }
comm::Communicator& DeviceCommunicator::host() const { return *impl_->host; }
std::string_view DeviceCommunicator::path() const { return impl_->peer_path ? "peer" : "staged"; }

void DeviceCommunicator::check() const {
  if (!impl_->state->aborted()) return;
  impl_->state->abort_host();
  std::rethrow_exception(impl_->state->failure());
}

void DeviceCommunicator::abort(const std::string& reason) {
  impl_->state->abort(kernels::cuda::abort_code(kernels::cuda::kAbortUser, impl_->state_rank, -1), reason);
}

}  // namespace seam::device
