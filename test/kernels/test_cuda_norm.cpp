// The CUDA norm kernels against the host kernels (themselves checked against the reference order):
// add + RMSNorm, the FP8 read, and the one-shot all-reduce + add + norm with every "rank" a stream
// of one GPU over its own partial and signal buffers, and across GPUs through peer access where there
// are several. Skips when no GPU is present.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/cuda/all_reduce_norm.h"
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
  for (DType io : {DType::f32, DType::bf16, DType::f16})
    for (int64_t cols : {int64_t{1}, int64_t{100}, int64_t{4096}, int64_t{20000}}) {
      CAPTURE(dtype_name(io));
      CAPTURE(cols);
      const int64_t rows = 7;
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

TEST_CASE("CUDA one-shot all-reduce + add + RMSNorm equals the host's fused reduce") {
  if (!have_gpu()) return;
  std::mt19937 rng(23);
  for (int world : {2, 4, 8})
    for (DType io : {DType::bf16, DType::f32})
    for (int64_t cols : {int64_t{3000}, int64_t{3001}}) {  // 16-byte packs, and per-element access
      CAPTURE(world);
      CAPTURE(cols);
      const int64_t rows = 5;
      std::vector<HostTensor> partials;
      std::vector<Tensor> partial_views;
      for (int r = 0; r < world; ++r) {
        partials.emplace_back(io, rows, cols);
        partials.back().fill_random(rng);
      }
      for (const HostTensor& p : partials) partial_views.push_back(p.view);  // after the vector stops growing
      HostTensor residual(io, rows, cols), weight(io, 1, cols), want_out(io, rows, cols);
      residual.fill_random(rng, -3.0f, 3.0f);
      weight.fill_random(rng);
      HostTensor want_res = residual;
      kernels::reduce_add_rms_norm(partial_views, want_res.view, {weight.view.data, io, kernels::NormWeight::plain, 1e-5f},
                                   want_out.view);

      DeviceTensor dw(weight.view);
      std::vector<std::unique_ptr<DeviceTensor>> dpartials, dres, dout;
      kernels::cuda::PeerBuffers peers;
      peers.world = world;
      std::vector<kernels::cuda::PeerSignal*> signals(world);
      std::vector<cudaStream_t> streams(world);
      for (int r = 0; r < world; ++r) {
        dpartials.push_back(std::make_unique<DeviceTensor>(partials[r].view));
        dres.push_back(std::make_unique<DeviceTensor>(residual.view));
        dout.push_back(std::make_unique<DeviceTensor>(residual.view));
        REQUIRE(cudaMalloc(reinterpret_cast<void**>(&signals[r]), sizeof(kernels::cuda::PeerSignal)) == cudaSuccess);
        REQUIRE(cudaMemset(signals[r], 0, sizeof(kernels::cuda::PeerSignal)) == cudaSuccess);
        REQUIRE(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking) == cudaSuccess);
        peers.partials[r] = dpartials[r]->data;
        peers.signals[r] = signals[r];
      }
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      const kernels::RmsNormSpec spec{dw.data, io, kernels::NormWeight::plain, 1e-5f};
      for (uint32_t epoch = 1; epoch <= 3; ++epoch) {  // repeated calls reuse the signals
        for (int r = 0; r < world; ++r)
          REQUIRE(cudaMemcpy(dres[r]->data, residual.view.data, residual.view.bytes(), cudaMemcpyHostToDevice) == cudaSuccess);
        // Every rank's kernel must be resident at once to pass the barriers: a few blocks each.
        for (int r = 0; r < world; ++r) {
          kernels::cuda::PeerBuffers mine = peers;
          mine.rank = r;
          REQUIRE(kernels::cuda::one_shot_all_reduce_add_rms_norm(mine, dpartials[r]->view, dres[r]->view, spec,
                                                                  dout[r]->view, epoch, streams[r]) == cudaSuccess);
        }
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      }
      for (int r = 0; r < world; ++r) {
        HostTensor got_res(io, rows, cols), got_out(io, rows, cols);
        dres[r]->to_host(got_res.view);
        dout[r]->to_host(got_out.view);
        check_close(got_res, want_res, true);
        check_close(got_out, want_out, false);
        cudaFree(signals[r]);
        cudaStreamDestroy(streams[r]);
      }
    }
}

TEST_CASE("CUDA one-shot all-reduce + add + RMSNorm across GPUs through peer-mapped memory") {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    MESSAGE("fewer than two CUDA devices: cross-GPU one-shot test skipped");
    return;
  }
  const int world = std::min(count, kernels::cuda::kMaxPeers);
  for (int a = 0; a < world; ++a)
    for (int b = 0; b < world; ++b) {
      int can = 0;
      if (a == b) continue;
      REQUIRE(cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess);
      if (!can) {
        MESSAGE("no peer access between GPUs: cross-GPU one-shot test skipped");
        return;
      }
      cudaSetDevice(a);
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      REQUIRE((e == cudaSuccess || e == cudaErrorPeerAccessAlreadyEnabled));
      cudaGetLastError();
    }
  std::mt19937 rng(31);
  const int64_t rows = 9, cols = 4096;
  const DType io = DType::bf16;
  std::vector<HostTensor> partials;
  for (int r = 0; r < world; ++r) {
    partials.emplace_back(io, rows, cols);
    partials.back().fill_random(rng);
  }
  std::vector<Tensor> partial_views;
  for (const HostTensor& p : partials) partial_views.push_back(p.view);
  HostTensor residual(io, rows, cols), weight(io, 1, cols), want_out(io, rows, cols);
  residual.fill_random(rng);
  weight.fill_random(rng);
  HostTensor want_res = residual;
  kernels::reduce_add_rms_norm(partial_views, want_res.view, {weight.view.data, io, kernels::NormWeight::gemma, 1e-6f},
                               want_out.view);

  // Rank r lives on GPU r: its partial, residual, output, weight and signal slots are on that GPU.
  std::vector<std::unique_ptr<DeviceTensor>> dpartials, dres, dout, dweight;
  std::vector<kernels::cuda::PeerSignal*> signals(world);
  std::vector<cudaStream_t> streams(world);
  kernels::cuda::PeerBuffers peers;
  peers.world = world;
  for (int r = 0; r < world; ++r) {
    REQUIRE(cudaSetDevice(r) == cudaSuccess);
    dpartials.push_back(std::make_unique<DeviceTensor>(partials[r].view));
    dres.push_back(std::make_unique<DeviceTensor>(residual.view));
    dout.push_back(std::make_unique<DeviceTensor>(residual.view));
    dweight.push_back(std::make_unique<DeviceTensor>(weight.view));
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&signals[r]), sizeof(kernels::cuda::PeerSignal)) == cudaSuccess);
    REQUIRE(cudaMemset(signals[r], 0, sizeof(kernels::cuda::PeerSignal)) == cudaSuccess);
    REQUIRE(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    peers.partials[r] = dpartials[r]->data;
    peers.signals[r] = signals[r];
  }
  for (int r = 0; r < world; ++r) {
    REQUIRE(cudaSetDevice(r) == cudaSuccess);
    kernels::cuda::PeerBuffers mine = peers;
    mine.rank = r;
    const kernels::RmsNormSpec spec{dweight[r]->data, io, kernels::NormWeight::gemma, 1e-6f};
    REQUIRE(kernels::cuda::one_shot_all_reduce_add_rms_norm(mine, dpartials[r]->view, dres[r]->view, spec, dout[r]->view, 1,
                                                            streams[r]) == cudaSuccess);
  }
  for (int r = 0; r < world; ++r) {
    REQUIRE(cudaSetDevice(r) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(streams[r]) == cudaSuccess);
    HostTensor got_res(io, rows, cols), got_out(io, rows, cols);
    dres[r]->to_host(got_res.view);
    dout[r]->to_host(got_out.view);
    check_close(got_res, want_res, true);
    check_close(got_out, want_out, false);
    cudaFree(signals[r]);
    cudaStreamDestroy(streams[r]);
  }
  cudaSetDevice(0);
}
