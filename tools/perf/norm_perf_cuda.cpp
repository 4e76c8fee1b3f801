// norm_perf_cuda: Seam's device residual add + RMSNorm (bf16 by default) inside CUDA graphs, per
// token count, against the GPU's measured copy bandwidth. The same function under torch.compile is
// timed by tools/perf/torch_norm_baseline.py with the same method; scripts/gpu-check.sh runs both.
//   norm_perf_cuda [--hidden H] [--tokens 16,256,8192] [--graph-calls N] [--reps R] [--dtype bf16|f32]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda/norm.h"
#include "tools/perf/device_copy_bandwidth.h"

namespace {

#define CHECK_CUDA(call)                                                                     \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_));                \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  using namespace seam;
  int64_t hidden = 7168;
  std::vector<int64_t> tokens = {16, 256, 8192};
  int graph_calls = 20, reps = 50;
  DType dtype = DType::bf16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--hidden") hidden = std::atol(v.c_str());
    else if (a == "--graph-calls") graph_calls = std::atoi(v.c_str());
    else if (a == "--reps") reps = std::atoi(v.c_str());
    else if (a == "--dtype") dtype = v == "f32" ? DType::f32 : DType::bf16;
    else if (a == "--tokens") {
      tokens.clear();
      std::stringstream ss(v);
      for (std::string t; std::getline(ss, t, ',');) tokens.push_back(std::atol(t.c_str()));
    } else {
      std::fprintf(stderr, "norm_perf_cuda: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const double bound = perf::device_copy_bandwidth(s);
  const size_t e = dtype_size(dtype);
  std::printf("# norm_perf_cuda: add + RMSNorm, %s, hidden %ld, %d calls per graph launch, median of %d\n",
              std::string(dtype_name(dtype)).c_str(), static_cast<long>(hidden), graph_calls, reps);
  std::printf("# bound: measured device copy bandwidth %.0f GB/s (read + write)\n", bound / 1e9);
  std::printf("%8s %12s %12s %8s\n", "tokens", "time(us)", "GB/s", "%bound");
  for (int64_t rows : tokens) {
    const size_t n = static_cast<size_t>(rows * hidden);
    void *x, *res, *out, *w;
    CHECK_CUDA(cudaMalloc(&x, n * e));
    CHECK_CUDA(cudaMalloc(&res, n * e));
    CHECK_CUDA(cudaMalloc(&out, n * e));
    CHECK_CUDA(cudaMalloc(&w, static_cast<size_t>(hidden) * e));
    CHECK_CUDA(cudaMemset(x, 0x3c, n * e));
    CHECK_CUDA(cudaMemset(res, 0x3c, n * e));
    CHECK_CUDA(cudaMemset(w, 0x3c, static_cast<size_t>(hidden) * e));
    const Device gpu = Device::cuda(0);
    const Tensor tx{x, dtype, gpu, rows, hidden, hidden}, tr{res, dtype, gpu, rows, hidden, hidden},
        to{out, dtype, gpu, rows, hidden, hidden};
    const kernels::RmsNormSpec spec{w, dtype, kernels::NormWeight::plain, 1e-6f};
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int c = 0; c < graph_calls; ++c) CHECK_CUDA(kernels::cuda::add_rms_norm(tx, tr, nullptr, spec, to, s));
    CHECK_CUDA(cudaStreamEndCapture(s, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t t0, t1;
    CHECK_CUDA(cudaEventCreate(&t0));
    CHECK_CUDA(cudaEventCreate(&t1));
    std::vector<float> ms;
    for (int r = 0; r < reps + 5; ++r) {
      CHECK_CUDA(cudaEventRecord(t0, s));
      CHECK_CUDA(cudaGraphLaunch(exec, s));
      CHECK_CUDA(cudaEventRecord(t1, s));
      CHECK_CUDA(cudaEventSynchronize(t1));
      float m = 0;
      CHECK_CUDA(cudaEventElapsedTime(&m, t0, t1));
      if (r >= 5) ms.push_back(m);
    }
    std::sort(ms.begin(), ms.end());
    const double us = ms[ms.size() / 2] * 1e3 / graph_calls;
    // x read, residual read and written, out written (the weight stays in cache).
    const double bytes = 4.0 * static_cast<double>(n * e);
    std::printf("%8ld %12.2f %12.0f %7.1f%%\n", static_cast<long>(rows), us, bytes / (us * 1e-6) / 1e9,
                100.0 * bytes / (us * 1e-6) / bound);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(x);
    cudaFree(res);
    cudaFree(out);
    cudaFree(w);
  }
  return 0;
}
