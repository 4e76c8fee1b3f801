#include <cstdint>
#include "runtime/comm/composite_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>

namespace seam::comm {

CompositeTransport::CompositeTransport(std::unique_ptr<shm::ShmTransport> shm,
                                       std::unique_ptr<ucx::UcxTransport> remote)
    : shm_(std::move(shm)), remote_(std::move(remote)) {
  local_.resize(static_cast<size_t>(shm_->size()));
  for (int r = 0; r < shm_->size(); ++r) local_[static_cast<size_t>(r)] = shm_->is_local(r);
  stop_fd_ = eventfd(0, EFD_CLOEXEC);
  watcher_ = std::thread([this] { watch_remote(); });
}

CompositeTransport::~CompositeTransport() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = write(stop_fd_, &one, sizeof(one));
  watcher_.join();
  close(stop_fd_);
}

bool CompositeTransport::progress() {
  bool a = shm_->progress();
  bool b = remote_->progress();
  return a || b;
}

void CompositeTransport::wait_for_activity(std::chrono::microseconds max) {
  if (!remote_->arm()) {  // UCX has events: progress them instead of sleeping
    shm_->mark_asleep(false);
    return;
  }
  {
    std::lock_guard lk(mu_);
    watching_ = true;
  }
  cv_.notify_one();
  shm_->wait_for_activity(max);
  watching_ = false;
}

void CompositeTransport::watch_remote() {
  const int me = shm_->rank();
  std::unique_lock lk(mu_);
  while (true) {
    cv_.wait(lk, [&] { return stop_ || watching_; });
    if (stop_) return;
    lk.unlock();
    pollfd fds[2] = {{remote_->event_fd(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    // Bounded so a stale readable fd cannot keep us spinning: the owner re-arms every wait.
    int n = poll(fds, 2, 10);
    // The exchange clears the flag with the ring; clearing it again after relocking could
    // erase the owner's next wait's request and leave that wait unwatched.
    if (n > 0 && (fds[0].revents & POLLIN) && watching_.exchange(false)) shm_->notify(me);
    lk.lock();
  }
}

}  // namespace seam::comm
