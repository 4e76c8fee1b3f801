// Integration check of device send/recv (pipeline handoff) under mpirun or the launcher: a ring
// in pipeline order (rank 0 sends first, every other rank receives, then sends on) for several
// counts and dtypes, each element equal bit for bit to what the sender held; sends queued back to
// back with one wait; on the peer path a captured CUDA graph replayed with new data; then a recv
// whose count differs from the send, which must fail with an error on both ranks, not deliver.
// Exits 77 (skipped) where there is no GPU.
//   device_p2p_check [--expect-path peer|staged]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "seam/communicator.h"
#include "seam/device_communicator.h"
#include "seam/errors.h"
#include "test/device/device_testing.h"

namespace seam::test::device {
namespace {

using seam::device::DeviceCommunicator;

struct Buffer {
  explicit Buffer(size_t bytes) { SEAM_CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1)); }
  ~Buffer() { cudaFree(p); }
  void* p = nullptr;
};

/// Bytes rank `from` sends in round `seed`: gen() for float types, a byte pattern otherwise.
std::vector<unsigned char> payload(DType t, size_t count, int from, uint32_t seed) {
  auto h = host_bytes(t, count);
  h.resize(count * dtype_size(t));  // host_bytes pads
  if (t == DType::f32 || t == DType::bf16 || t == DType::f16) {
    for (size_t i = 0; i < count; ++i) store(t, h.data(), i, gen(from, i, seed));
  } else {
    for (size_t i = 0; i < count * dtype_size(t); ++i) h[i] = static_cast<unsigned char>(i * 131 + from * 7 + seed);
  }
  return h;
}

/// One trip round the ring on `stream`: rank r gets rank r-1's payload. Returns wrong bytes.
long ring(DeviceCommunicator& dev, DType t, size_t count, uint32_t seed, cudaStream_t stream) {
  const int n = dev.size(), me = dev.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t bytes = count * dtype_size(t);
  Buffer out(bytes), in(bytes);
  const auto mine = payload(t, count, me, seed);
  SEAM_CUDA_OK(cudaMemcpyAsync(out.p, mine.data(), bytes, cudaMemcpyHostToDevice, stream));
  SEAM_CUDA_OK(cudaMemsetAsync(in.p, 0xEE, bytes ? bytes : 1, stream));
  comm::Work w;
  if (me == 0) {
    dev.send(out.p, count, t, next, stream);
    w = dev.recv(in.p, count, t, prev, stream);
  } else {
    dev.recv(in.p, count, t, prev, stream);
    w = dev.send(out.p, count, t, next, stream);
  }
  w.wait();
  SEAM_CUDA_OK(cudaStreamSynchronize(stream));
  std::vector<unsigned char> got(bytes);
  if (bytes) SEAM_CUDA_OK(cudaMemcpy(got.data(), in.p, bytes, cudaMemcpyDeviceToHost));
  const auto want = payload(t, count, prev, seed);
  long wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += got[i] != want[i];
  return wrong;
}

int run_rings(DeviceCommunicator& dev, bool large, cudaStream_t stream) {
  int failures = 0;
  uint32_t seed = 1;
  std::vector<size_t> counts = {1, 7, 1000, 65536 + 5, size_t{1} << 20};
  if (large) counts.push_back(size_t{24} << 20);  // 96 MiB of f32: past one workspace
  for (DType t : {DType::f32, DType::bf16, DType::u8, DType::f64})
    for (size_t count : counts) {
      const long wrong = ring(dev, t, count, seed++, stream);
      if (wrong) {
        ++failures;
        std::fprintf(stderr, "FAIL rank %d: ring of %zu x %s: %ld wrong bytes\n", dev.rank(), count,
                     std::string(dtype_name(t)).c_str(), wrong);
      }
    }
  return failures;
}

/// Ten trips queued on the stream, one wait at the end.
int run_queued(DeviceCommunicator& dev, cudaStream_t stream) {
  const int n = dev.size(), me = dev.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
  constexpr int kTrips = 10;
  const size_t count = 5000, bytes = count * 4;
  Buffer out(bytes * kTrips), in(bytes * kTrips);
  std::vector<unsigned char> all;
  for (int k = 0; k < kTrips; ++k) {
    auto p = payload(DType::f32, count, me, 900 + static_cast<uint32_t>(k));
    all.insert(all.end(), p.begin(), p.end());
  }
  SEAM_CUDA_OK(cudaMemcpyAsync(out.p, all.data(), all.size(), cudaMemcpyHostToDevice, stream));
  comm::Work w;
  for (int k = 0; k < kTrips; ++k) {
    char* o = static_cast<char*>(out.p) + static_cast<size_t>(k) * bytes;
    char* i = static_cast<char*>(in.p) + static_cast<size_t>(k) * bytes;
    if (me == 0) {
      dev.send(o, count, DType::f32, next, stream);
      w = dev.recv(i, count, DType::f32, prev, stream);
    } else {
      dev.recv(i, count, DType::f32, prev, stream);
      w = dev.send(o, count, DType::f32, next, stream);
    }
  }
  w.wait();
  std::vector<unsigned char> got(all.size());
  SEAM_CUDA_OK(cudaMemcpy(got.data(), in.p, got.size(), cudaMemcpyDeviceToHost));
  long wrong = 0;
  for (int k = 0; k < kTrips; ++k) {
    const auto want = payload(DType::f32, count, prev, 900 + static_cast<uint32_t>(k));
    wrong += std::memcmp(want.data(), got.data() + static_cast<size_t>(k) * bytes, bytes) != 0;
  }
  if (wrong) std::fprintf(stderr, "FAIL rank %d: %ld of %d queued trips wrong\n", me, wrong, kTrips);
  return wrong ? 1 : 0;
}

/// The peer path's trip captured once and replayed with new data each time.
int run_graph(DeviceCommunicator& dev, cudaStream_t stream) {
  const int n = dev.size(), me = dev.rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
  const size_t count = 4099, bytes = count * 2;
  Buffer out(bytes), in(bytes);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  SEAM_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  if (me == 0) {
    dev.send(out.p, count, DType::bf16, next, stream);
    dev.recv(in.p, count, DType::bf16, prev, stream);
  } else {
    dev.recv(in.p, count, DType::bf16, prev, stream);
    dev.send(out.p, count, DType::bf16, next, stream);
  }
  SEAM_CUDA_OK(cudaStreamEndCapture(stream, &graph));
  SEAM_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  int failures = 0;
  std::vector<unsigned char> got(bytes);
  for (uint32_t replay = 0; replay < 50; ++replay) {
    const auto mine = payload(DType::bf16, count, me, 7000 + replay);
    SEAM_CUDA_OK(cudaMemcpyAsync(out.p, mine.data(), bytes, cudaMemcpyHostToDevice, stream));
    SEAM_CUDA_OK(cudaGraphLaunch(exec, stream));
    SEAM_CUDA_OK(cudaMemcpyAsync(got.data(), in.p, bytes, cudaMemcpyDeviceToHost, stream));
    SEAM_CUDA_OK(cudaStreamSynchronize(stream));
    dev.check();
    if (payload(DType::bf16, count, prev, 7000 + replay) != got) {
      ++failures;
      std::fprintf(stderr, "FAIL rank %d: graph replay %u delivered other bytes\n", me, replay);
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return failures;
}

/// Rank 0 sends 1000 floats, rank 1 expects 1001: rank 1's recv fails with an error, and within
/// the deadline the communicator is aborted on every rank (rank 0's send may have completed).
int run_mismatch(DeviceCommunicator& dev, comm::Communicator& host, cudaStream_t stream) {
  const int me = dev.rank();
  Buffer b(1001 * 4);
  std::string error;
  try {
    comm::Work w;
    if (me == 0) w = dev.send(b.p, 1000, DType::f32, 1, stream);
    if (me == 1) w = dev.recv(b.p, 1001, DType::f32, 0, stream);
    w.wait();
  } catch (const Error& e) {
    error = e.what();
  }
  int failures = 0;
  if (me == 1 && error.empty()) {
    ++failures;
    std::fprintf(stderr, "FAIL rank 1: a recv of another count than its send did not fail\n");
  }
  if (me == 1 && !error.empty()) std::printf("rank 1: the mismatched recv failed: %s\n", error.c_str());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool aborted = !error.empty();
  while (!aborted && std::chrono::steady_clock::now() < deadline) {
    try {
      dev.check();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const Error&) {
      aborted = true;
    }
  }
  if (!aborted) {
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: the communicator did not abort after the mismatched pair\n", me);
  }
  cudaStreamSynchronize(stream);
  cudaGetLastError();
  host.barrier().wait();
  return failures;
}

}  // namespace
}  // namespace seam::test::device

int main(int argc, char** argv) {
  using namespace seam::test::device;
  return run_check(argc, argv, "device send/recv checks", [](auto& world, cudaStream_t stream, const CheckOptions& o) {
    int failures = 0;
    {
      auto dev = seam::device::DeviceCommunicator::create(world);
      failures += check_path(*dev, o.expect_path);
      failures += run_rings(*dev, o.large, stream);
      failures += run_queued(*dev, stream);
      if (dev->path() == "peer") failures += run_graph(*dev, stream);
    }
    // On a communicator of its own: its failure aborts it and its host communicator.
    auto dev = seam::device::DeviceCommunicator::create(world->duplicate());
    return failures + run_mismatch(*dev, *world, stream);
  });
}
