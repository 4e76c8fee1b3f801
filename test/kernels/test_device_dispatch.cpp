// How host code reaches the device path: a tensor whose Device is CUDA goes to the installed
// kernels::DeviceOps, never to a host loop. This machine has no GPU, so a recording DeviceOps (host
// memory standing in for device memory) checks the routing; the CUDA implementation itself runs in
// the gpu-labelled tests (sim_cuda_*, device_collectives_*).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/device/device_ops.h"
#include "kernels/norm/elementwise.h"
#include "kernels/norm/rms_norm.h"
#include "seam/errors.h"
#include "runtime/boundary/rows/scratch.h"
#include "runtime/residual/norm.h"
#include "runtime/residual/owned_tensor.h"

using namespace seam;

namespace {

struct RecordingOps final : kernels::DeviceOps {
  std::vector<std::string> calls;
  int live = 0;
  void copy(const Tensor& src, const Tensor& dst) override {
    calls.push_back(std::string("copy ") + (src.device.is_cuda() ? "d" : "h") + (dst.device.is_cuda() ? "d" : "h"));
    for (int64_t r = 0; r < src.rows; ++r) std::memcpy(dst.row(r), src.row(r), src.row_bytes());
  }
  void zero(const Tensor& t) override {
    calls.push_back("zero");
    for (int64_t r = 0; r < t.rows; ++r) std::memset(t.row(r), 0, t.row_bytes());
  }
  void add_inplace(const Tensor&, const Tensor&) override { calls.push_back("add_inplace"); }
  void rms_norm(const Tensor&, const kernels::RmsNormSpec&, const Tensor&) override { calls.push_back("rms_norm"); }
  void add_rms_norm(const Tensor&, const Tensor&, const Tensor*, const kernels::RmsNormSpec&, const Tensor&) override {
    calls.push_back("add_rms_norm");
  }
  void rms_norm_fp8(const Tensor&, const kernels::RmsNormSpec&, const kernels::Fp8Rows&) override {
    calls.push_back("rms_norm_fp8");
  }
  void add_rms_norm_fp8(const Tensor&, const Tensor&, const Tensor*, const kernels::RmsNormSpec&,
                        const kernels::Fp8Rows&) override {
    calls.push_back("add_rms_norm_fp8");
  }
  void* allocate(size_t bytes, int device) override {
    calls.push_back("allocate " + std::to_string(bytes) + " on " + std::to_string(device));
    ++live;
    return std::calloc(1, bytes);
  }
  void release(void* data, int) noexcept override {
    --live;
    std::free(data);
  }
};

Tensor on_cuda(Tensor t, int ordinal = 0) {
  t.device = Device::cuda(ordinal);
  return t;
}

}  // namespace

TEST_CASE("device tensors without seam::cuda are refused, host tensors never reach the device hook") {
  kernels::install_device_ops(nullptr);
  Buffer a(64), b(64);
  const Tensor ha = a.as_tensor(DType::f32, 2, 8), hb = b.as_tensor(DType::f32, 2, 8);
  CHECK_THROWS_AS(kernels::copy(on_cuda(ha), hb), NotSupportedError);
  CHECK_THROWS_AS(kernels::add_inplace(on_cuda(ha), on_cuda(hb)), NotSupportedError);
  CHECK_THROWS_AS(residual::OwnedTensor::zeros(DType::f32, 2, 8, Device::cuda(0)), NotSupportedError);
  CHECK_NOTHROW(kernels::copy(ha, hb));  // host stays host
}

TEST_CASE("device tensors go to the installed DeviceOps; mixed memory is refused with a message") {
  RecordingOps ops;
  kernels::install_device_ops(&ops);
  Buffer a(64), b(64), w(32);
  const Tensor ha = a.as_tensor(DType::f32, 2, 8), hb = b.as_tensor(DType::f32, 2, 8);
  const Tensor da = on_cuda(ha), db = on_cuda(hb);

  kernels::copy(ha, db);
  kernels::copy(da, hb);
  kernels::add_inplace(da, db);
  kernels::zero(da);
  const kernels::RmsNormSpec spec{w.data(), DType::f32, kernels::NormWeight::plain, 1e-6f};
  kernels::rms_norm(da, spec, db);
  kernels::add_rms_norm(da, db, nullptr, spec, da);
  CHECK(ops.calls == std::vector<std::string>{"copy hd", "copy dh", "add_inplace", "zero", "rms_norm", "add_rms_norm"});

  CHECK_THROWS_WITH_AS(kernels::add_inplace(da, hb), doctest::Contains("operands in host memory and cuda:0"), ValueError);
  CHECK_THROWS_AS(kernels::add_rms_norm(da, hb, nullptr, spec, db), ValueError);
  CHECK_THROWS_AS(kernels::add_inplace(da, on_cuda(hb, 1)), ValueError);
  CHECK_THROWS_AS(kernels::reduce_add_rms_norm(std::vector<Tensor>{da}, db, spec, db), NotSupportedError);
  kernels::install_device_ops(nullptr);
}

TEST_CASE("workspaces follow the memory of the rows they serve") {
  RecordingOps ops;
  kernels::install_device_ops(&ops);
  {
    boundary::rows::Scratch scratch;
    Buffer host(4 * 8 * 4);
    const Tensor rows = host.as_tensor(DType::f32, 4, 8);
    const Tensor h = scratch.get(rows, 4);
    CHECK_FALSE(h.device.is_cuda());
    CHECK(ops.live == 0);
    const Tensor d = scratch.get(on_cuda(rows, 1), 4);
    CHECK(d.device == Device::cuda(1));
    CHECK(ops.live == 1);
    CHECK(ops.calls.back().find("on 1") != std::string::npos);
    const Tensor again = scratch.get(on_cuda(rows, 1), 2);  // fits: no new allocation
    CHECK(again.data == d.data);
    CHECK(ops.live == 1);
    CHECK_FALSE(scratch.get(rows, 1).device.is_cuda());  // back to host: the device block is released
    CHECK(ops.live == 0);

    // An owned device tensor is allocated there and zero-filled by the device; a clone to host
    // copies back.
    residual::OwnedTensor t = residual::OwnedTensor::zeros(DType::f32, 2, 8, Device::cuda(0));
    CHECK(t.view.device == Device::cuda(0));
    CHECK(ops.calls.back() == "zero");
    const residual::OwnedTensor back = residual::OwnedTensor::clone(t.view, Device::cpu());
    CHECK_FALSE(back.view.device.is_cuda());
    CHECK(ops.calls.back() == "copy dh");
  }
  CHECK(ops.live == 0);
  kernels::install_device_ops(nullptr);
}

TEST_CASE("a norm reads rows only in the memory of its weight") {
  RecordingOps ops;
  kernels::install_device_ops(&ops);
  {
    Buffer w(32), x(64);
    const Tensor weight = w.as_tensor(DType::f32, 1, 8);
    residual::RmsNorm host_norm(weight, 1e-6f);
    residual::RmsNorm device_norm(on_cuda(weight), 1e-6f);
    const Tensor rows = x.as_tensor(DType::f32, 2, 8);
    CHECK_THROWS_WITH_AS(host_norm.apply(on_cuda(rows)), doctest::Contains("norm's weight"), ValueError);
    CHECK_THROWS_AS(device_norm.apply(rows), ValueError);
    const Tensor out = device_norm.apply(on_cuda(rows));
    CHECK(out.device == Device::cuda(0));
    CHECK(ops.calls.back() == "rms_norm");
  }
  CHECK(ops.live == 0);
  kernels::install_device_ops(nullptr);
}
