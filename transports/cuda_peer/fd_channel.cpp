#include <cstdint>
#include "transports/cuda_peer/fd_channel.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "seam/errors.h"

namespace seam::transport::cuda_peer {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxFds = 16;

struct Hello {
  int32_t rank;
  int32_t count;
};

[[noreturn]] void fail_errno(const std::string& what) {
  throw CommError("seam: fd channel: " + what + ": " + std::strerror(errno));
}

sockaddr_un address_of(const std::string& name, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(a.sun_path)) throw ValueError("seam: fd channel name too long");
  a.sun_path[0] = '\0';  // abstract: no file to clean up
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

void wait_ready(int fd, short events, Clock::time_point deadline, const std::string& what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(deadline));
    if (n > 0) return;
    if (n == 0) throw CommError("seam: fd channel: timed out " + what);
    if (errno != EINTR) fail_errno(what);
  }
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

FdChannel::FdChannel() {
  static std::atomic<uint64_t> serial{0};
  std::random_device rd;
  name_ = "seam-fd-" + std::to_string(::getpid()) + "-" + std::to_string(serial++) + "-" + std::to_string(rd());
  listener_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (listener_.get() < 0) fail_errno("socket");
  socklen_t len = 0;
  const sockaddr_un a = address_of(name_, &len);
  if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) fail_errno("bind");
  if (::listen(listener_.get(), 64) != 0) fail_errno("listen");
}

FdChannel::~FdChannel() = default;

std::vector<std::vector<UniqueFd>> FdChannel::exchange(int rank, const std::vector<std::string>& names,
                                                       const std::vector<pid_t>& pids, const std::vector<int>& mine,
                                                       std::chrono::milliseconds timeout) {
  const int n = static_cast<int>(names.size());
  if (mine.size() > kMaxFds) throw ValueError("seam: fd channel: too many descriptors");
  const auto deadline = Clock::now() + timeout;
  // Send to every peer first: each message waits in the peer's socket until it accepts.
  std::vector<UniqueFd> outgoing;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == rank) continue;
    UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.get() < 0) fail_errno("socket");
    socklen_t len = 0;
    const sockaddr_un a = address_of(names[peer], &len);
    while (::connect(s.get(), reinterpret_cast<const sockaddr*>(&a), len) != 0) {
      if (errno != EAGAIN && errno != EINTR && errno != ECONNREFUSED) fail_errno("connect to rank " + std::to_string(peer));
      if (Clock::now() > deadline) throw CommError("seam: fd channel: rank " + std::to_string(peer) + " did not listen", peer);
      ::usleep(1000);
    }
    Hello hello{rank, static_cast<int32_t>(mine.size())};
    iovec io{&hello, sizeof(hello)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    if (!mine.empty()) {
      m.msg_control = control;
      m.msg_controllen = CMSG_SPACE(sizeof(int) * mine.size());
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * mine.size());
      std::memcpy(CMSG_DATA(c), mine.data(), sizeof(int) * mine.size());
    }
    if (::sendmsg(s.get(), &m, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(hello)))
      fail_errno("send to rank " + std::to_string(peer));
    outgoing.push_back(std::move(s));
  }
  std::vector<std::vector<UniqueFd>> received(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int got = 0; got < n - 1;) {
    wait_ready(listener_.get(), POLLIN, deadline, "waiting for peers' descriptors");
    UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (c.get() < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      fail_errno("accept");
    }
    ucred cred{};
    socklen_t cred_len = sizeof(cred);
    if (::getsockopt(c.get(), SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) fail_errno("SO_PEERCRED");
    wait_ready(c.get(), POLLIN, deadline, "reading a peer's descriptors");
    Hello hello{};
    iovec io{&hello, sizeof(hello)};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    const ssize_t r = ::recvmsg(c.get(), &m, MSG_CMSG_CLOEXEC);
    std::vector<UniqueFd> fds;
    for (cmsghdr* h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
      if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
      const size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < k; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
        fds.emplace_back(fd);
      }
    }
    // A stranger (any process of this network namespace may connect) is dropped, not trusted.
    if (r != static_cast<ssize_t>(sizeof(hello)) || hello.rank < 0 || hello.rank >= n || hello.rank == rank ||
        seen[static_cast<size_t>(hello.rank)] || cred.pid != pids[static_cast<size_t>(hello.rank)] ||
        hello.count != static_cast<int32_t>(fds.size()) || (m.msg_flags & MSG_CTRUNC))
      continue;
    seen[static_cast<size_t>(hello.rank)] = true;
    received[static_cast<size_t>(hello.rank)] = std::move(fds);
    ++got;
  }
  return received;
}

}  // namespace seam::transport::cuda_peer
