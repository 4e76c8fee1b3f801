// One rank of the fault test: a loop of all-reduces in which rank --victim kills itself
// (SIGKILL, no clean-up) at iteration --at. Every survivor must see a CommError naming a peer and
// exit with status 3; seam_local_launcher checks the statuses and how soon after the death.
//   comm_fault_rank --victim R --at K [--iters N] [--count C]
// --victim -1: nobody dies (a link is cut from outside instead); loops until an error.
// --linger-ms L: after the error, stay alive L ms before exiting (as an engine that reports and
// cleans up would); peers must then learn of the failure from its abort notice, not its exit.
// --shared-host: the buffers are SharedHostMemory blocks; after the error every survivor checks
// that /dev/shm holds no name of the victim's any more (exit 7 if it does).
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "seam/errors.h"
#include "seam/communicator.h"
#include "transports/shm/shared_host_memory.h"

namespace {
/// Names in /dev/shm that process `pid` created ("seam-<pid>-...").
std::vector<std::string> shm_names_of(int pid) {
  std::vector<std::string> names;
  const std::string prefix = "seam-" + std::to_string(pid) + "-";
  if (DIR* dir = opendir("/dev/shm")) {
    while (const dirent* e = readdir(dir))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) names.push_back(e->d_name);
    closedir(dir);
  }
  return names;
}
}  // namespace

int main(int argc, char** argv) {
  int victim = 1, at = 20, iters = 1000000, linger_ms = 0;
  size_t count = 4096;
  bool shared_host = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--shared-host") shared_host = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--shared-host") {
      --i;
      continue;
    }
    if (a == "--victim") victim = std::atoi(argv[i + 1]);
    else if (a == "--at") at = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::atoi(argv[i + 1]);
    else if (a == "--count") count = static_cast<size_t>(std::atol(argv[i + 1]));
    else if (a == "--linger-ms") linger_ms = std::atoi(argv[i + 1]);
  }
  int rank = -1, i = 0;
  int victim_pid = 0;
  try {
    auto world = seam::comm::Communicator::create_world();
    rank = world->rank();
    std::vector<int32_t> pids(static_cast<size_t>(world->size()));
    const int32_t my_pid = getpid();
    world->all_gather(&my_pid, pids.data(), 1, seam::DType::i32).wait();
    if (victim >= 0 && victim < world->size()) victim_pid = pids[static_cast<size_t>(victim)];
    std::vector<float> in_plain, out_plain;
    std::unique_ptr<seam::SharedHostMemory> in_block, out_block;
    float *in, *out;
    if (shared_host) {
      in_block = seam::SharedHostMemory::allocate(count * sizeof(float));
      out_block = seam::SharedHostMemory::allocate(count * sizeof(float));
      in = static_cast<float*>(in_block->data());
      out = static_cast<float*>(out_block->data());
    } else {
      in_plain.resize(count);
      out_plain.resize(count);
      in = in_plain.data();
      out = out_plain.data();
    }
    std::fill(in, in + count, 1.0f);
    for (; i < iters; ++i) {
      if (rank == victim && i == at) {
        if (shared_host && shm_names_of(getpid()).size() < 3) {
          std::fprintf(stderr, "[rank %d] expected its blocks and marker in /dev/shm\n", rank);
          return 8;
        }
        raise(SIGKILL);
      }
      world->all_reduce(in, out, count, seam::DType::f32, seam::ReduceOp::sum).wait();
      if (out[0] != static_cast<float>(world->size())) {
        std::fprintf(stderr, "[rank %d] wrong result %f\n", rank, out[0]);
        return 6;
      }
    }
  } catch (const seam::CommError& e) {
    std::fprintf(stderr, "[rank %d] CommError at iteration %d (peer %d): %s\n", rank, i, e.peer(), e.what());
    if (linger_ms) std::this_thread::sleep_for(std::chrono::milliseconds(linger_ms));
    if (shared_host) {
      const auto left = shm_names_of(victim_pid);
      for (const auto& n : left) std::fprintf(stderr, "[rank %d] /dev/shm/%s of dead rank %d remains\n", rank, n.c_str(), victim);
      if (!left.empty()) return 7;
      std::fprintf(stderr, "[rank %d] no name of dead rank %d (pid %d) left in /dev/shm\n", rank, victim, victim_pid);
    }
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] unexpected error at iteration %d: %s\n", rank, i, e.what());
    return 5;
  }
  std::fprintf(stderr, "[rank %d] finished %d iterations without an error\n", rank, iters);
  return 4;
}
