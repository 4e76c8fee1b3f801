// One rank of the device fault test (run by seam_local_launcher --expect-killed): a loop of device
// all-reduces, eager (--mode eager: each Work waited; --mode stream: calls queued on the stream,
// which is synchronised and check()ed every 8) or as CUDA-graph replays (--mode graph: no host
// waits, only stream synchronisation and check()), in which rank --victim kills itself
// (SIGKILL) at iteration --at. Every survivor must get a CommError naming a peer, then find its
// CUDA context usable (a cudaMemcpy succeeds) and a graph replay on the aborted communicator
// drained at once; it exits 3. Exits 77 where there is no GPU.
//   device_fault_rank --victim R --at K [--mode eager|stream|graph] [--count C]
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "seam/errors.h"
#include "seam/communicator.h"
#include "seam/device_communicator.h"
#include "test/device/device_testing.h"

int main(int argc, char** argv) {
  using namespace seam;
  using Clock = std::chrono::steady_clock;
  int victim = 1, at = 20;
  size_t count = 65536;
  std::string mode = "eager";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--victim") victim = std::atoi(argv[i + 1]);
    else if (a == "--at") at = std::atoi(argv[i + 1]);
    else if (a == "--count") count = static_cast<size_t>(std::atol(argv[i + 1]));
    else if (a == "--mode") mode = argv[i + 1];
  }
  int rank = -1, i = 0;
  cudaStream_t stream = nullptr;
  cudaGraphExec_t replay = nullptr;
  float* buf = nullptr;
  try {
    auto world = comm::Communicator::create_world();
    rank = world->rank();
    if (test::device::pick_gpu(rank) < 0) {
      std::fprintf(stderr, "[rank %d] no CUDA device: skipped\n", rank);
      return test::device::kSkipped;
    }
    auto dev = device::DeviceCommunicator::create(world);
    SEAM_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    SEAM_CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&buf), count * sizeof(float)));
    SEAM_CUDA_OK(cudaMemset(buf, 0, count * sizeof(float)));
    // A graph of one all-reduce, captured before anything fails (the peer path: staged calls
    // wait on the host, so they cannot be captured; those ranks run eager only).
    if (dev->path() == "peer") {
      cudaGraph_t graph;
      SEAM_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
      dev->all_reduce(buf, buf, count, DType::f32, ReduceOp::sum, stream);
      SEAM_CUDA_OK(cudaStreamEndCapture(stream, &graph));
      SEAM_CUDA_OK(cudaGraphInstantiate(&replay, graph, 0));
    } else if (mode == "graph") {
      std::fprintf(stderr, "[rank %d] --mode graph needs the peer path, this communicator is %s\n", rank,
                   std::string(dev->path()).c_str());
      return 5;
    }
    try {
      for (; i < 1000000; ++i) {
        if (rank == victim && i == at) raise(SIGKILL);
        if (mode == "graph") {
          SEAM_CUDA_OK(cudaGraphLaunch(replay, stream));
          SEAM_CUDA_OK(cudaStreamSynchronize(stream));
          dev->check();
        } else if (mode == "stream") {
          dev->all_reduce(buf, buf, count, DType::f32, ReduceOp::max, stream);
          if (i % 8 == 7) {
            SEAM_CUDA_OK(cudaStreamSynchronize(stream));
            dev->check();
          }
        } else {
          dev->all_reduce(buf, buf, count, DType::f32, ReduceOp::max, stream).wait();
        }
      }
    } catch (const CommError& e) {
      std::fprintf(stderr, "[rank %d] CommError at iteration %d (peer %d): %s\n", rank, i, e.peer(), e.what());
      // The context is usable, and a replay on the aborted communicator drains at once.
      float probe = 0;
      SEAM_CUDA_OK(cudaMemcpy(&probe, buf, sizeof(float), cudaMemcpyDeviceToHost));
      const auto t0 = Clock::now();
      if (replay) SEAM_CUDA_OK(cudaGraphLaunch(replay, stream));
      SEAM_CUDA_OK(cudaStreamSynchronize(stream));
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      if (ms > 1000) {
        std::fprintf(stderr, "[rank %d] a replay after the abort took %.0f ms\n", rank, ms);
        return 6;
      }
      try {
        dev->all_reduce(buf, buf, count, DType::f32, ReduceOp::sum, stream);
        std::fprintf(stderr, "[rank %d] a call after the abort was accepted\n", rank);
        return 7;
      } catch (const CommError&) {
      }
      std::fprintf(stderr, "[rank %d] context usable, replay drained in %.1f ms\n", rank, ms);
      return 3;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] unexpected error at iteration %d: %s\n", rank, i, e.what());
    return 5;
  }
  return 4;
}
