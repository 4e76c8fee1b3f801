#include "runtime/comm/composite_transport.h"

#include <algorithm>

namespace seam::comm {

CompositeTransport::CompositeTransport(std::unique_ptr<shm::ShmTransport> shm,
                                       std::unique_ptr<transport::Transport> remote)
    : shm_(std::move(shm)), remote_(std::move(remote)) {
  local_.resize(static_cast<size_t>(shm_->size()));
  for (int r = 0; r < shm_->size(); ++r) local_[static_cast<size_t>(r)] = shm_->is_local(r);
}

bool CompositeTransport::progress() {
  bool a = shm_->progress();
  bool b = remote_->progress();
  return a || b;
}

void CompositeTransport::wait_for_activity(std::chrono::microseconds max) {
  // One thread cannot sleep on the shm futex and UCX's fd at once: sleep on the futex in short
  // slices and let the driver's progress() look at UCX between them.
  if (remote_->progress()) return;
  shm_->wait_for_activity(std::min(max, std::chrono::microseconds(100)));
}

}  // namespace seam::comm
