// The CUDA norm kernels against the host kernels (themselves checked against the reference order):
// add + RMSNorm and the FP8 read. (The fused all-reduce + add + norm runs between processes in
// test/device.) Skips when no GPU is present.
#include <cstdint>
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/cuda/norm.h"
#include "kernels/norm/rms_norm.h"
#include "kernels/quant/fp8.h"
#include "test/kernels/norm_reference.h"

using namespace seam;
using seam::test::HostTensor;

namespace {

bool have_gpu() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    MESSAGE("no CUDA device: CUDA kernel tests skipped");
    return false;
  }
  return true;
}

// A device copy of a host tensor (contiguous), freed with the object.
struct DeviceTensor {
  explicit DeviceTensor(const Tensor& host) : bytes(host.bytes()) {
    REQUIRE(cudaMalloc(&data, std::max<size_t>(bytes, 1)) == cudaSuccess);
    REQUIRE(cudaMemcpy(data, host.data, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    view = Tensor{data, host.dtype, Device::cuda(0), host.rows, host.cols, host.cols};
  }
  ~DeviceTensor() { cudaFree(data); }
  void to_host(const Tensor& host) const { REQUIRE(cudaMemcpy(host.data, data, bytes, cudaMemcpyDeviceToHost) == cudaSuccess); }
  void* data = nullptr;
  size_t bytes;
  Tensor view;
};

void check_close(const HostTensor& got, const HostTensor& want, bool exact) {
  double worst = 0;
  for (int64_t r = 0; r < got.view.rows; ++r)
    for (int64_t c = 0; c < got.view.cols; ++c) {
      if (exact) REQUIRE(got.at(r, c) == want.at(r, c));
      worst = std::max(worst, seam::test::ulps(got.view.dtype, got.at(r, c), want.at(r, c)));
    }
  // The block reduction sums the squares in another FP32 order than the host's eight lanes.
  CHECK(worst <= (got.view.dtype == DType::f32 ? 16.0 : 1.0));
}

}  // namespace

TEST_CASE("CUDA add + RMSNorm and the FP8 read match the host kernels") {
  if (!have_gpu()) return;
  std::mt19937 rng(17);
  // Few rows and many (the register rows take 1024 threads a row below 64 rows, about 256 above:
  // 7168 columns then hold 4 packs a thread).
  for (DType io : {DType::f32, DType::bf16, DType::f16})
    for (int64_t cols : {int64_t{1}, int64_t{100}, int64_t{4096}, int64_t{7168}, int64_t{20000}})
    for (int64_t rows : {int64_t{7}, int64_t{96}}) {
      CAPTURE(dtype_name(io));
      CAPTURE(cols);
      CAPTURE(rows);
      HostTensor x(io, rows, cols), residual(io, rows, cols), extra(io, rows, cols), weight(DType::bf16, 1, cols);
      x.fill_random(rng);
      residual.fill_random(rng, -6.0f, 6.0f);
      extra.fill_random(rng);
      weight.fill_random(rng);
      DeviceTensor dx(x.view), dres(residual.view), dextra(extra.view), dw(weight.view), dout(x.view);
      HostTensor want_res = residual, want_out(io, rows, cols), got_res(io, rows, cols), got_out(io, rows, cols);
      const kernels::RmsNormSpec host_spec{weight.view.data, DType::bf16, kernels::NormWeight::gemma, 1e-6f};
      const kernels::RmsNormSpec device_spec{dw.data, DType::bf16, kernels::NormWeight::gemma, 1e-6f};
      kernels::add_rms_norm(x.view, want_res.view, &extra.view, host_spec, want_out.view);
      REQUIRE(kernels::cuda::add_rms_norm(dx.view, dres.view, &dextra.view, device_spec, dout.view, nullptr) == cudaSuccess);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      dres.to_host(got_res.view);
      dout.to_host(got_out.view);
      check_close(got_res, want_res, true);
      check_close(got_out, want_out, false);

      // FP8: the device's quantisation of its own norm output, element for element.
      HostTensor q_host(DType::fp8_e4m3, rows, cols);
      DeviceTensor dres2(residual.view), dq(q_host.view);
      float* dscales = nullptr;
      REQUIRE(cudaMalloc(reinterpret_cast<void**>(&dscales), rows * sizeof(float)) == cudaSuccess);
      REQUIRE(kernels::cuda::add_rms_norm_fp8(dx.view, dres2.view, &dextra.view, device_spec, {dq.view, dscales}, nullptr) ==
              cudaSuccess);
      std::vector<float> scales(rows);
      REQUIRE(cudaMemcpy(scales.data(), dscales, rows * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
      cudaFree(dscales);
      dq.to_host(q_host.view);
      for (int64_t r = 0; r < rows; ++r) {
        float absmax = 0;
        for (int64_t c = 0; c < cols; ++c) absmax = std::max(absmax, std::fabs(got_out.at(r, c)));
        REQUIRE(scales[r] == std::max(absmax / 448.0f, 1.0f / (448.0f * 512.0f)));
        const auto* codes = static_cast<const uint8_t*>(q_host.view.row(r));
        for (int64_t c = 0; c < cols; ++c)
          REQUIRE(codes[c] == kernels::float_to_fp8_e4m3(std::clamp(got_out.at(r, c) * (1.0f / scales[r]), -448.0f, 448.0f)));
      }
    }
}
