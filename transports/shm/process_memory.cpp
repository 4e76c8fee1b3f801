#include "transports/shm/process_memory.h"

#include <sys/uio.h>

#include <cerrno>

namespace seam::shm {

namespace {

using ProcessCopy = ssize_t (*)(pid_t, const iovec*, unsigned long, const iovec*, unsigned long,
                                unsigned long);

/// process_vm_readv or process_vm_writev of `bytes` between `local` and `remote`, retrying
/// partial copies and EINTR.
int copy_process_memory(ProcessCopy copy, pid_t pid, char* remote, char* local, size_t bytes) {
  while (bytes > 0) {
    iovec local_iov{local, bytes}, remote_iov{remote, bytes};
    const ssize_t done = copy(pid, &local_iov, 1, &remote_iov, 1, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return done < 0 ? errno : EFAULT;
    local += done, remote += done, bytes -= static_cast<size_t>(done);
  }
  return 0;
}

}  // namespace

int read_process_memory(pid_t pid, const void* remote, void* local, size_t bytes) {
  return copy_process_memory(process_vm_readv, pid, const_cast<char*>(static_cast<const char*>(remote)),
                             static_cast<char*>(local), bytes);
}

int write_process_memory(pid_t pid, void* remote, const void* local, size_t bytes) {
  return copy_process_memory(process_vm_writev, pid, static_cast<char*>(remote),
                             const_cast<char*>(static_cast<const char*>(local)), bytes);
}

}  // namespace seam::shm
