#include "tools/perf/device_copy_bandwidth.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace seam::perf {
namespace {

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

}  // namespace

double device_copy_bandwidth(cudaStream_t stream) {
  constexpr size_t kBytes = size_t{256} << 20;
  constexpr int kRepeats = 5;
  void *from = nullptr, *to = nullptr;
  check(cudaMalloc(&from, kBytes), "cudaMalloc");
  check(cudaMalloc(&to, kBytes), "cudaMalloc");
  std::vector<cudaEvent_t> start(kRepeats), stop(kRepeats);
  for (int i = 0; i < kRepeats; ++i) {
    check(cudaEventCreate(&start[i]), "cudaEventCreate");
    check(cudaEventCreate(&stop[i]), "cudaEventCreate");
  }
  check(cudaMemsetAsync(from, 1, kBytes, stream), "cudaMemsetAsync");
  check(cudaMemcpyAsync(to, from, kBytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");  // warm
  for (int i = 0; i < kRepeats; ++i) {
    check(cudaEventRecord(start[i], stream), "cudaEventRecord");
    check(cudaMemcpyAsync(to, from, kBytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
    check(cudaEventRecord(stop[i], stream), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> seconds(kRepeats);
  for (int i = 0; i < kRepeats; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start[i], stop[i]), "cudaEventElapsedTime");
    seconds[i] = ms / 1e3;
    cudaEventDestroy(start[i]);
    cudaEventDestroy(stop[i]);
  }
  cudaFree(from);
  cudaFree(to);
  std::nth_element(seconds.begin(), seconds.begin() + kRepeats / 2, seconds.end());
  return 2.0 * static_cast<double>(kBytes) / seconds[kRepeats / 2];
}

}  // namespace seam::perf
