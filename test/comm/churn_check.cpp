// Integration check under mpirun: an engine that makes and drops groups for its whole life.
// Each cycle splits the world, runs an all-reduce through the new group's shared-memory region and
// drops the group; resident memory, the files in /dev/shm and the mapped regions must stay flat, and every dropped
// group's communicator id must return (the next free id unchanged after the cycles). With --mixed, up to 6 groups (splits of the world and
// groups of ranks 0 and 1) stay in use, and rank r destroys a retired one r % 3 cycles late, so
// the ranks' free ids differ when they agree on the next one.
//   comm_churn_check [--cycles N] [--mixed]
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/comm/comm_internal.h"
#include "seam/communicator.h"

namespace {

long resident_kib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/// This process's files in /dev/shm (Seam names them seam-<pid>-...); other jobs' come and go.
int shm_files() {
  const std::string mine = "seam-" + std::to_string(getpid()) + "-";
  int n = 0;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, mine.c_str(), mine.size()) == 0;
    closedir(d);
  }
  return n;
}

/// Shared-memory collective regions this process maps (their segments' names end in "-coll"; each
/// communicator owns its regions, which go with it).
int mapped_regions() {
  int n = 0;
  if (FILE* f = std::fopen("/proc/self/maps", "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, f)) n += std::strstr(line, "/dev/shm/seam-") && std::strstr(line, "-coll");
    std::fclose(f);
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  int cycles = 1500;
  bool mixed = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--cycles") == 0 && i + 1 < argc) cycles = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--mixed") == 0) mixed = true;
  }
  try {
    auto world = seam::comm::Communicator::create_world();
    const size_t count = 16384;  // 64 KiB: through the region
    std::vector<float> in(count, 1.0f), out(count);
    std::deque<std::shared_ptr<seam::comm::Communicator>> alive, retired;  // --mixed
    int made = 0;
    auto check = [&](seam::comm::Communicator& c, float value, float expect) {
      std::vector<float> mine(count, value);
      c.all_reduce(mine.data(), out.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
      if (out[0] != expect || out[count - 1] != expect)
        throw std::runtime_error("wrong all-reduce result on group " + std::to_string(made));
    };
    auto cycle = [&] {
      if (!mixed) {
        auto group = world->split(0, world->rank());
        group->all_reduce(in.data(), out.data(), count, seam::DType::f32, seam::ReduceOp::sum).wait();
        if (out[count - 1] != static_cast<float>(world->size())) throw std::runtime_error("wrong all-reduce result");
        return;
      }
      // Alternately a split of the world and a group of ranks 0 and 1; every live group is used
      // again, so an id held twice would mix their messages.
      ++made;
      const int pair[] = {0, 1};
      alive.push_back(made % 2 ? world->split(0, world->rank()) : world->group(pair));  // null off the pair
      for (auto& c : alive)
        if (c) check(*c, static_cast<float>(made % 7), static_cast<float>((made % 7) * c->size()));
      if (alive.size() > 5) {
        retired.push_back(std::move(alive.front()));
        alive.pop_front();
      }
      while (retired.size() > static_cast<size_t>(world->rank() % 3)) retired.pop_front();
    };
    for (int i = 0; i < 50; ++i) cycle();  // warm: allocators and caches settle
    world->barrier().wait();
    // Every dropped group's id returns: the next free one stays where it was (a leak of one id a
    // cycle would run the ids out after 16,383 cycles).
    auto& engine = *seam::comm::CommunicatorAccess::of(*world).engine;
    const uint32_t free_before = engine.free_context_from(1);
    const long rss_before = resident_kib();
    const int shm_before = shm_files();
    const int regions_before = mapped_regions();
    for (int i = 0; i < cycles; ++i) cycle();
    world->barrier().wait();
    const uint32_t free_after = engine.free_context_from(1);
    const long grown = resident_kib() - rss_before;
    const int shm_after = shm_files();
    const int regions_after = mapped_regions();
    std::printf("rank %d: %d split/all-reduce/drop cycles: resident %+ld KiB, /dev/shm files %d -> %d, "
                "mapped regions %d -> %d, next free communicator id %u -> %u\n",
                world->rank(), cycles, grown, shm_before, shm_after, regions_before, regions_after, free_before,
                free_after);
    if (!mixed && free_after != free_before) {
      std::fprintf(stderr, "rank %d: communicator ids leak with the cycles\n", world->rank());
      return 1;
    }
    // Before regions were released, each cycle kept about 2.4 MB mapped at 2 ranks.
    if (grown > 64 * 1024 || shm_after > shm_before || regions_after > regions_before) {
      std::fprintf(stderr, "rank %d: memory, /dev/shm or the mapped regions grew with the cycles\n", world->rank());
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "churn check: %s\n", e.what());
    return 2;
  }
  return 0;
}
