#include "transports/shm/asymmetric_fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace seam::shm {
namespace {

long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }

}  // namespace

bool register_asymmetric_fence() {
  const long commands = membarrier(MEMBARRIER_CMD_QUERY);
  if (commands < 0 || !(commands & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
      !(commands & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
    return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

bool heavy_fence() { return membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0; }

}  // namespace seam::shm
