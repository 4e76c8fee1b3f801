#include "tools/perf/pile_up.h"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>

#include "seam/communicator.h"

namespace seam::perf {

int pile_up_on_one_cpu(comm::Communicator& comm) {
  double one = 1;
  comm.all_reduce(&one, &one, 1, DType::f64, ReduceOp::sum).wait();  // the region's set-up
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  if (cpu == CPU_SETSIZE) return -1;
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  while (const dirent* task = readdir(tasks))
    if (task->d_name[0] != '.') sched_setaffinity(std::atoi(task->d_name), sizeof only, &only);
  closedir(tasks);
  comm.barrier().wait();
  return cpu;
}

}  // namespace seam::perf
