// Integration check under mpirun, 2 ranks, single-copy from 4 KiB (SEAM_SHM_SINGLE_COPY_BYTES):
// rank 1 passes an all-reduce a buffer whose first page it may not write (a buffer shorter than
// the call, as far as its peer can tell). Rank 0, which writes its folded share there, fails
// with the kernel's error; rank 1 hears of it when its own part is done (its result lacks rank
// 0's share) and fails too. Both fail within the deadline with a CommError naming the cause,
// and neither leaves the call while the other still writes into it.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "seam/errors.h"
#include "seam/communicator.h"

int main() {
  using namespace seam;
  auto world = comm::Communicator::create_world();
  if (world->size() != 2) {
    std::fprintf(stderr, "bad_buffer_check: needs 2 ranks\n");
    return 1;
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t count = 2 * page / sizeof(float);  // rank 0's share: rank 1's first page
  void* pages = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return 1;
  auto* buffer = static_cast<float*>(pages);
  for (size_t i = 0; i < count; ++i) buffer[i] = 1.0f;
  if (world->rank() == 1) mprotect(pages, page, PROT_READ);  // peers may read, not write it
  const auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    world->all_reduce(buffer, buffer, count, DType::f32, ReduceOp::sum).wait();
  } catch (const CommError& e) {
    error = e.what();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const char* expected = world->rank() == 0 ? "single-copy write" : "failed in the middle of the call";
  const bool ok = error.find(expected) != std::string::npos && seconds < 10;
  std::printf("bad_buffer_check: rank %d: %s after %.3f s: %s\n", world->rank(),
              ok ? "OK" : "FAILED", seconds, error.empty() ? "no error" : error.c_str());
  return ok ? 0 : 1;
}
