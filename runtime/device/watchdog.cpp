#include "runtime/device/watchdog.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "kernels/cuda/peer_sync.h"

namespace seam::device {
namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

bool process_gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

/// How often peers without a pidfd are looked at (those with one wake the poll when they exit).
constexpr int kLookMs = 50;

}  // namespace

Watchdog::Watchdog(std::shared_ptr<DeviceState> state, int rank, const std::vector<pid_t>& pids)
    : state_(std::move(state)), rank_(rank) {
  for (int r = 0; r < static_cast<int>(pids.size()); ++r) {
    if (r == rank) continue;
    pidfds_.push_back(open_pidfd(pids[static_cast<size_t>(r)]));
    pids_.push_back(pids[static_cast<size_t>(r)]);
    ranks_.push_back(r);
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  const uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof(one)) < 0) {
    // the thread still ends at its next poll timeout
  }
  thread_.join();
  for (int fd : pidfds_)
    if (fd >= 0) ::close(fd);
  ::close(stop_fd_);
}

void Watchdog::run() {
  std::vector<pollfd> fds;
  fds.push_back({stop_fd_, POLLIN, 0});
  for (int fd : pidfds_)
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  for (;;) {
    const int n = ::poll(fds.data(), fds.size(), kLookMs);
    if (n < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    for (size_t i = 0; i < pidfds_.size(); ++i) {
      bool dead = false;
      if (pidfds_[i] >= 0) {
        for (size_t k = 1; k < fds.size(); ++k)
          if (fds[k].fd == pidfds_[i] && fds[k].revents) dead = true;
      } else {
        dead = process_gone(pids_[i]);
      }
      if (!dead) continue;
      state_->abort(kernels::cuda::abort_code(kernels::cuda::kAbortPeerDied, rank_, ranks_[i]),
                    "rank " + std::to_string(ranks_[i]) + " (pid " + std::to_string(pids_[i]) + ") exited");
      return;  // the communicator is aborted: nothing more to watch
    }
  }
}

}  // namespace seam::device
