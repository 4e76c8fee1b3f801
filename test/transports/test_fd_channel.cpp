// The fd channel that shares CUDA VMM handles and the abort page between a host's ranks: ranks on
// threads pass memfds to each other and read what the peers wrote through them; a process that is
// not the rank it claims to be is ignored (its descriptors never reach the caller), and a rank that
// never sends ends the exchange with a CommError at the deadline.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "seam/errors.h"
#include "transports/cuda_peer/fd_channel.h"

using namespace seam;
using seam::transport::cuda_peer::FdChannel;
using seam::transport::cuda_peer::UniqueFd;
using namespace std::chrono_literals;

namespace {

UniqueFd memfd_holding(const std::string& text) {
  UniqueFd fd(memfd_create("seam-test", MFD_CLOEXEC));
  REQUIRE(fd.get() >= 0);
  REQUIRE(write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  return fd;
}

std::string read_all(int fd) {
  char buf[64] = {};
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

TEST_CASE("ranks on threads pass descriptors to every peer") {
  for (int n : {1, 2, 5}) {
    CAPTURE(n);
    std::vector<std::unique_ptr<FdChannel>> channels;
    std::vector<std::string> names;
    for (int r = 0; r < n; ++r) {
      channels.push_back(std::make_unique<FdChannel>());
      names.push_back(channels.back()->name());
    }
    const std::vector<pid_t> pids(static_cast<size_t>(n), getpid());
    std::vector<std::vector<std::vector<UniqueFd>>> got(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        UniqueFd a = memfd_holding("rank " + std::to_string(r)), b = memfd_holding("page");
        std::vector<int> mine{a.get()};
        if (r == 0) mine.push_back(b.get());
        got[static_cast<size_t>(r)] = channels[static_cast<size_t>(r)]->exchange(r, names, pids, mine, 5000ms);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p) {
        const auto& fds = got[static_cast<size_t>(r)][static_cast<size_t>(p)];
        if (p == r) {
          CHECK(fds.empty());
          continue;
        }
        REQUIRE(fds.size() == (p == 0 ? 2u : 1u));
        CHECK(read_all(fds[0].get()) == "rank " + std::to_string(p));
        if (p == 0) CHECK(read_all(fds[1].get()) == "page");
      }
  }
}

TEST_CASE("a process that is not the rank it claims is ignored, and the exchange times out") {
  FdChannel channel;
  const std::string name = channel.name();
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Claims to be rank 1, whom the bootstrap placed in another process (pid 1).
    FdChannel own;
    const std::string mine = own.name();
    if (write(pipe_fds[1], mine.data(), mine.size()) < 0) _exit(1);
    close(pipe_fds[1]);
    UniqueFd fd(memfd_create("stranger", 0));
    try {
      own.exchange(1, {name, mine}, {getppid(), getpid()}, {fd.get()}, 1500ms);
    } catch (...) {
    }
    _exit(0);
  }
  close(pipe_fds[1]);
  char buf[128] = {};
  REQUIRE(read(pipe_fds[0], buf, sizeof(buf) - 1) > 0);
  close(pipe_fds[0]);
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(channel.exchange(0, {name, std::string(buf)}, {getpid(), 1}, {}, 800ms),
                       doctest::Contains("timed out"), CommError);
  CHECK(std::chrono::steady_clock::now() - start < 3s);
  int status = 0;
  waitpid(child, &status, 0);
}

TEST_CASE("a peer that never listens ends the exchange with a CommError at the deadline") {
  FdChannel channel;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(channel.exchange(0, {channel.name(), "seam-fd-absent"}, {getpid(), getpid()}, {}, 300ms),
                  CommError);
  CHECK(std::chrono::steady_clock::now() - start < 2s);
}
