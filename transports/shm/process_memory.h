// Reading and writing another local process's memory (process_vm_readv/writev, "CMA"): the shm
// transport's single-copy messages and the shared-memory collectives' single-copy schedules.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace seam::shm {

/// Copies `bytes` at `remote` in process `pid` to `local`, retrying partial reads and EINTR.
/// Returns 0, or the errno of the failure (ESRCH: the process is gone; EPERM: not allowed).
int read_process_memory(pid_t pid, const void* remote, void* local, size_t bytes);

/// Copies `bytes` at `local` to `remote` in process `pid`; returns as read_process_memory.
int write_process_memory(pid_t pid, void* remote, const void* local, size_t bytes);

}  // namespace seam::shm
