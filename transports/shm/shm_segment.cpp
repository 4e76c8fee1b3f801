#include <cstdint>
#include "transports/shm/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "layouts/errors.h"

namespace seam::shm {

std::unique_ptr<SharedSegment> SharedSegment::create(const std::string& name, size_t bytes) {
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
