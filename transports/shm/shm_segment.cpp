#include <cstdint>
#include "transports/shm/shm_segment.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "seam/errors.h"
#include "layouts/log.h"

namespace seam::shm {

namespace {

constexpr char kAliveSuffix[] = "-alive";

// Every process that creates segments first creates "/seam-<pid>-<random>-alive" and holds a
// shared flock on it until it exits: the kernel drops the lock when the process dies, whatever
// its pid namespace, so a sweeper tells a dead owner from a live one with the same number.
struct AliveMarker {
  std::mutex mutex;
  pid_t pid = 0;  // the process that made it (a forked child makes its own)
  std::string name;
};

AliveMarker& marker() {
  static AliveMarker m;
  return m;
}

void unlink_marker_at_exit() {
  if (marker().pid == getpid()) shm_unlink(marker().name.c_str());
}

void announce_alive() {
  AliveMarker& m = marker();
  std::lock_guard lock(m.mutex);
  if (m.pid == getpid()) return;
  const bool first = m.pid == 0;
  m.pid = getpid();
  m.name = segment_name(m.pid, random_token(), kAliveSuffix + 1);
  // Locked under a name no sweeper reads, then renamed: the marker never shows unlocked.
  const std::string staging = "/dev/shm/.seam-staging-" + std::to_string(random_token());
  int fd = open(staging.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd >= 0 && (flock(fd, LOCK_SH) != 0 || rename(staging.c_str(), ("/dev/shm" + m.name).c_str()) != 0)) {
    close(fd);
    unlink(staging.c_str());
    fd = -1;
  }
  if (fd < 0) {  // no /dev/shm directory to rename in: create it in place
    fd = shm_open(m.name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, LOCK_SH) != 0) close(fd);
  }  // the descriptor stays open for life
  if (first) std::atexit(unlink_marker_at_exit);
  remove_dead_segments();
}

/// The pid in "seam-<pid>-...", or 0.
pid_t pid_in_name(const char* name) {
  if (std::strncmp(name, "seam-", 5) != 0) return 0;
  char* end = nullptr;
  const long pid = std::strtol(name + 5, &end, 10);
  return end != name + 5 && *end == '-' && pid > 0 ? static_cast<pid_t>(pid) : 0;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// This user's segment names in /dev/shm by owner pid (all pids when `only` is 0).
std::map<pid_t, std::vector<std::string>> segments_by_pid(pid_t only) {
  std::map<pid_t, std::vector<std::string>> found;
  DIR* dir = opendir("/dev/shm");
  if (!dir) return found;
  const uid_t uid = geteuid();
  while (const dirent* e = readdir(dir)) {
    const pid_t pid = pid_in_name(e->d_name);
    if (pid == 0 || (only != 0 && pid != only)) continue;
    struct stat st {};
    if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != uid)
      continue;
    found[pid].push_back(e->d_name);
  }
  closedir(dir);
  return found;
}

/// Unlinks `names` unless one is an alive marker some process still locks.
size_t remove_if_unlocked(const std::vector<std::string>& names) {
  for (const auto& n : names) {
    if (!ends_with(n, kAliveSuffix)) continue;
    const int fd = shm_open(("/" + n).c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) continue;
    const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;
    close(fd);
    if (held) return 0;
  }
  size_t removed = 0;
  for (const auto& n : names)  // the marker last: a sweeper that stops midway finds the rest
    if (!ends_with(n, kAliveSuffix) && shm_unlink(("/" + n).c_str()) == 0) ++removed;
  for (const auto& n : names)
    if (ends_with(n, kAliveSuffix) && shm_unlink(("/" + n).c_str()) == 0) ++removed;
  return removed;
}

}  // namespace

size_t remove_segments_of(pid_t pid) {
  if (pid <= 0 || pid == getpid()) return 0;
  const auto found = segments_by_pid(pid);
  const size_t removed = found.empty() ? 0 : remove_if_unlocked(found.begin()->second);
  if (removed) SEAM_LOG_DEBUG("seam shm: removed {} shared-memory names of dead process {}", removed, pid);
  return removed;
}

size_t remove_dead_segments() {
  size_t removed = 0;
  for (const auto& [pid, names] : segments_by_pid(0)) {
    if (pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;  // running (or a zombie)
    removed += remove_if_unlocked(names);
  }
  if (removed) log().info("seam shm: removed {} shared-memory names left in /dev/shm by dead processes", removed);
  return removed;
}

std::unique_ptr<SharedSegment> SharedSegment::create(const std::string& name, size_t bytes) {
  announce_alive();
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw CommError("seam shm: cannot create segment " + name + ": " + strerror(errno));
  int err = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  // Reserve the pages now: on a too-small /dev/shm this fails cleanly instead of a later SIGBUS.
  if (!err) err = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err) {
    close(fd);
    shm_unlink(name.c_str());
    throw CommError("seam shm: cannot size segment " + name + " to " + std::to_string(bytes) +
                    " bytes (is /dev/shm large enough?): " + strerror(err));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    throw CommError("seam shm: cannot map segment " + name + ": " + strerror(errno));
  }
  return std::unique_ptr<SharedSegment>(new SharedSegment(name, p, bytes, true));
}

std::unique_ptr<SharedSegment> SharedSegment::open(const std::string& name, size_t bytes) {
  int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw CommError("seam shm: cannot open segment " + name + ": " + strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes || st.st_size == 0) {
    close(fd);
    throw CommError("seam shm: segment " + name + " is smaller than expected");
  }
  if (bytes == 0) bytes = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) throw CommError("seam shm: cannot map segment " + name + ": " + strerror(errno));
  return std::unique_ptr<SharedSegment>(new SharedSegment(name, p, bytes, false));
}

void map_in(void* data, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data) + bytes;
#ifdef MADV_POPULATE_WRITE  // Linux 5.14: one call
  if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0) return;
#endif
  for (uintptr_t at = begin; at < end; at += page)
    static_cast<void>(*reinterpret_cast<volatile const char*>(at));
}

SharedSegment::~SharedSegment() {
  if (owner_) unlink();
  munmap(data_, bytes_);
}

void SharedSegment::unlink() {
  if (unlinked_) return;
  unlinked_ = true;
  shm_unlink(name_.c_str());
}

uint64_t random_token() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string segment_name(pid_t pid, uint64_t token, const std::string& what) {
  char buf[96];
  snprintf(buf, sizeof(buf), "/seam-%d-%016llx-%s", static_cast<int>(pid),
           static_cast<unsigned long long>(token), what.c_str());
  return buf;
}

std::string unique_segment_name(const std::string& what) {
  return segment_name(getpid(), random_token(), what);
}

}  // namespace seam::shm
