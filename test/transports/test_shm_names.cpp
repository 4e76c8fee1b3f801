// Shared-memory names: SharedHostMemory blocks get names another user cannot predict, and the
// names of a process killed with SIGKILL are removed by the next process that creates a segment
// (real forked processes; /dev/shm is listed to check).
#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <memory>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "transports/shm/shared_host_memory.h"
#include "transports/shm/shm_segment.h"

using seam::SharedHostMemory;
namespace shm = seam::shm;

namespace {

std::set<std::string> names_of(pid_t pid) {
  std::set<std::string> names;
  const std::string prefix = "seam-" + std::to_string(pid) + "-";
  if (DIR* dir = opendir("/dev/shm")) {
    while (const dirent* e = readdir(dir))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.insert(e->d_name);
    closedir(dir);
  }
  return names;
}

/// The one name in `after` that is not in `before`.
std::string new_name(const std::set<std::string>& before, const std::set<std::string>& after) {
  std::vector<std::string> added;
  for (const auto& n : after)
    if (!before.count(n)) added.push_back(n);
  REQUIRE(added.size() == 1);
  return added[0];
}

/// A child that allocates `blocks` SharedHostMemory blocks, reports through a pipe, and sleeps.
pid_t spawn_holder(int blocks) {
  int p[2];
  REQUIRE(pipe(p) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    std::vector<std::unique_ptr<SharedHostMemory>> held;
    for (int i = 0; i < blocks; ++i) held.push_back(SharedHostMemory::allocate(4096));
    char ok = 1;
    if (write(p[1], &ok, 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(p[1]);
  char ok = 0;
  REQUIRE(read(p[0], &ok, 1) == 1);
  close(p[0]);
  return pid;
}

/// A fresh process's first segment (what the next job on the host does), then it exits.
void run_next_job() {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto block = SharedHostMemory::allocate(4096);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

/// A pid no process has now.
pid_t unused_pid() {
  for (pid_t pid = 4000000; pid > 1000; pid -= 7919)
    if (kill(pid, 0) != 0 && errno == ESRCH) return pid;
  return 0;
}

}  // namespace

TEST_CASE("SharedHostMemory names are random, not counting up, and do not show the process token") {
  auto first = SharedHostMemory::allocate(4096);  // the process's alive marker comes with it
  const auto before = names_of(getpid());
  auto a = SharedHostMemory::allocate(4096);
  const auto with_a = names_of(getpid());
  auto b = SharedHostMemory::allocate(4096);
  const std::string name_a = new_name(before, with_a);
  const std::string name_b = new_name(with_a, names_of(getpid()));
  // "seam-<pid>-<16 hex digits>-host"
  const std::string prefix = "seam-" + std::to_string(getpid()) + "-";
  REQUIRE(name_a.size() == prefix.size() + 16 + 5);
  REQUIRE(name_b.size() == name_a.size());
  CHECK(name_a.substr(prefix.size() + 16) == "-host");
  const uint64_t bits_a = std::stoull(name_a.substr(prefix.size(), 16), nullptr, 16);
  const uint64_t bits_b = std::stoull(name_b.substr(prefix.size(), 16), nullptr, 16);
  CHECK(bits_a != bits_b);
  CHECK(bits_b - bits_a != 1);
  CHECK(std::popcount(bits_a ^ bits_b) >= 8);  // independent 64-bit values differ in ~32 bits
  char token_hex[17];
  std::snprintf(token_hex, sizeof token_hex, "%016llx", static_cast<unsigned long long>(shm::process_token()));
  CHECK(name_a.find(token_hex) == std::string::npos);
  CHECK(name_b.find(token_hex) == std::string::npos);
  // A peer still finds each block from (pid, token, handle).
  static_cast<char*>(b->data())[0] = 7;
  const auto* mapped = static_cast<const char*>(
      shm::map_shared_handle(getpid(), shm::process_token(), shm::shared_handle_of(b->data(), 1)));
  CHECK(mapped[0] == 7);
}

TEST_CASE("a killed process's blocks are removed by the next process on the host; a live one's stay") {
  const pid_t victim = spawn_holder(3);
  const pid_t live = spawn_holder(2);
  CHECK(names_of(victim).size() == 4);  // three blocks and the alive marker
  CHECK(names_of(live).size() == 3);
  REQUIRE(kill(victim, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(victim, &status, 0) == victim);
  CHECK(WIFSIGNALED(status));
  CHECK(names_of(victim).size() == 4);  // nothing removes them by itself
  run_next_job();
  CHECK(names_of(victim).empty());
  CHECK(names_of(live).size() == 3);
  kill(live, SIGKILL);
  waitpid(live, &status, 0);
  run_next_job();
  CHECK(names_of(live).empty());
}

TEST_CASE("names of a pid unknown here are kept while their alive marker is locked") {
  // As a live process in another pid namespace that shares /dev/shm looks from here.
  const pid_t pid = unused_pid();
  REQUIRE(pid != 0);
  const std::string marker = shm::segment_name(pid, 1, "alive");
  const std::string block = shm::segment_name(pid, 2, "host");
  const int marker_fd = shm_open(marker.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  REQUIRE(marker_fd >= 0);
  const int block_fd = shm_open(block.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  REQUIRE(block_fd >= 0);
  close(block_fd);
  REQUIRE(flock(marker_fd, LOCK_SH) == 0);
  shm::remove_dead_segments();
  CHECK(names_of(pid).size() == 2);
  CHECK(shm::remove_segments_of(pid) == 0);
  close(marker_fd);  // its owner exits: the lock goes
  CHECK(shm::remove_dead_segments() >= 2);
  CHECK(names_of(pid).empty());
}
