// The peers' side of SharedHostMemory (seam/shared_host_memory.h): finding and mapping a range
// of another local process's shared host memory.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "seam/shared_host_memory.h"

namespace seam {
namespace shm {

/// How a peer finds a range of this process's shared host memory: the allocation's number and
/// the offset in it, packed in one word (0: not in shared host memory).
uint64_t shared_handle_of(const void* data, size_t bytes);
/// A random number of this process that peers need, with its pid, to find its blocks.
uint64_t process_token();
/// The address, in this process, of the range `handle` names in process `pid` (whose
/// process_token() is `token`), mapping that
/// allocation on first use (and then unmapping the peers' blocks freed since). Throws
/// CommError when it cannot be mapped.
void* map_shared_handle(pid_t pid, uint64_t token, uint64_t handle);
/// How many peers' blocks this process has mapped (tests).
size_t mapped_peer_blocks();

}  // namespace shm
}  // namespace seam
