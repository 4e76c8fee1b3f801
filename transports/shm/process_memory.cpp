#include "transports/shm/process_memory.h"

#include <sys/uio.h>

#include <cerrno>

namespace seam::shm {

int read_process_memory(pid_t pid, const void* remote, void* local, size_t bytes) {
  auto* to = static_cast<char*>(local);
  auto* from = static_cast<const char*>(remote);
  while (bytes > 0) {
    iovec local_iov{to, bytes}, remote_iov{const_cast<char*>(from), bytes};
    const ssize_t got = process_vm_readv(pid, &local_iov, 1, &remote_iov, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return got < 0 ? errno : EFAULT;
    to += got, from += got, bytes -= static_cast<size_t>(got);
  }
  return 0;
}

}  // namespace seam::shm
