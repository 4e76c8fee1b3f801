// Collectives through Seam's C++ API, built against the installed package. Run it under mpirun, or
// start the ranks yourself with SEAM_STORE_ADDR, SEAM_RANK, SEAM_WORLD_SIZE and SEAM_JOB_TOKEN:
// every rank all-reduces 1..N scaled by its rank + 1, gathers the ranks' ids, and checks both.
#include <seam/communicator.h>
#include <seam/errors.h>
#include <seam/version.h>

#include <cstdio>
#include <vector>

int main() {
  try {
    auto world = seam::comm::Communicator::create_world();
    const int rank = world->rank(), size = world->size();
    std::vector<float> data(1000);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((rank + 1) * i);
    // Non-blocking: the Work completes the call; wait() throws CommError / TimeoutError.
    world->all_reduce(data.data(), data.data(), data.size(), seam::DType::f32, seam::ReduceOp::sum).wait();
    std::vector<int> ids(static_cast<size_t>(size));
    const int mine = 100 + rank;
    world->all_gather(&mine, ids.data(), 1, seam::DType::i32).wait();

    const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
    int wrong = 0;
    for (size_t i = 0; i < data.size(); ++i) wrong += data[i] != ranks_sum * static_cast<float>(i);
    for (int r = 0; r < size; ++r) wrong += ids[static_cast<size_t>(r)] != 100 + r;
    if (rank == 0)
      std::printf("seam %s: all-reduce and all-gather over %d ranks (%s): %s\n", SEAM_VERSION_STRING, size,
                  world->transport_name().c_str(), wrong ? "WRONG" : "ok");
    return wrong ? 1 : 0;
  } catch (const seam::Error& e) {
    std::fprintf(stderr, "seam: %s\n", e.what());
    return 1;
  }
}
