// add + RMSNorm kernels against the reference order of §5.2 (test/kernels/norm_reference.h).
#include <cstdint>
#include <doctest/doctest.h>

#include "kernels/norm/rms_norm.h"
#include "seam/errors.h"
#include "test/kernels/isa.h"
#include "test/kernels/norm_reference.h"

using namespace seam;
using seam::test::HostTensor;

namespace {

constexpr DType kIoTypes[] = {DType::f32, DType::bf16, DType::f16};

struct Case {
  DType io;
  kernels::NormWeight form;
  int64_t rows, cols;
  bool with_residual, with_extra;
  int partials;
};

// The FP32 factor a weight element contributes, straight from the definition of each form.
std::vector<float> weight_factors(const HostTensor& w, kernels::NormWeight form) {
  std::vector<float> f;
  for (int64_t c = 0; c < w.view.cols; ++c) f.push_back((form == kernels::NormWeight::gemma ? 1.0f : 0.0f) + w.at(0, c));
  return f;
}

void check_case(const Case& k, std::mt19937& rng) {
  CAPTURE(dtype_name(k.io));
  CAPTURE(static_cast<int>(k.form));
  CAPTURE(k.rows);
  CAPTURE(k.cols);
  CAPTURE(k.partials);
  const float eps = 1e-5f;
  std::vector<HostTensor> partials;
  for (int i = 0; i < k.partials; ++i) {
    partials.emplace_back(k.io, k.rows, k.cols, k.cols + 3 * i);  // strided rows for i > 0
    partials.back().fill_random(rng);
  }
  HostTensor residual(k.io, k.rows, k.cols, k.cols + 5), extra(k.io, k.rows, k.cols), weight(k.io, 1, k.cols);
  residual.fill_random(rng, -8.0f, 8.0f);
  extra.fill_random(rng, -1.0f, 1.0f);
  weight.fill_random(rng, -1.5f, 1.5f);
  const HostTensor residual_before = residual;
  HostTensor out(k.io, k.rows, k.cols), reduced(k.io, k.rows, k.cols);

  kernels::RmsNormSpec spec{weight.view.data, k.io, k.form, eps};
  if (k.partials > 1) {
    std::vector<Tensor> views;
    for (auto& p : partials) views.push_back(p.view);
    kernels::reduce_add_rms_norm(views, residual.view, spec, out.view, &reduced.view);
  } else if (k.with_residual) {
    kernels::add_rms_norm(partials[0].view, residual.view, k.with_extra ? &extra.view : nullptr, spec, out.view);
  } else {
    kernels::rms_norm(partials[0].view, spec, out.view);
  }

  const std::vector<float> factors = weight_factors(weight, k.form);
  double worst = 0;
  for (int64_t r = 0; r < k.rows; ++r) {
    // Spec order: x = f32(h) (+ f32(residual)) (+ f32(extra)); a reduced sum is first rounded.
    std::vector<float> x(k.cols);
    for (int64_t c = 0; c < k.cols; ++c) {
      float sum = partials[0].at(r, c);
      for (int i = 1; i < k.partials; ++i) sum += partials[i].at(r, c);
      if (k.partials > 1) {
        sum = seam::test::round_to(k.io, sum);
        REQUIRE(reduced.at(r, c) == sum);
      }
      if (k.with_residual || k.partials > 1) sum += residual_before.at(r, c);
      if (k.with_extra) sum += extra.at(r, c);
      x[c] = sum;
    }
    const auto ref = seam::test::reference_norm_row(x, factors, eps, k.io);
    for (int64_t c = 0; c < k.cols; ++c) {
      if (k.with_residual || k.partials > 1) REQUIRE(residual.at(r, c) == ref.residual[c]);  // bit-exact
      worst = std::max(worst, seam::test::ulps(k.io, out.at(r, c), ref.out[c]));
    }
  }
  // Only the kernel's FP32 variance accumulation differs from the reference: at most one rounding
  // step of a 16-bit output; for fp32 output, a relative error of about 1e-6.
  CHECK(worst <= (k.io == DType::f32 ? 16.0 : 1.0));
}

}  // namespace

TEST_CASE("add+RMSNorm matches the reference order for every dtype, weight form and shape") {
  std::mt19937 rng(7);
  seam::test::for_each_isa([&] {
    for (DType io : kIoTypes)
      for (auto form : {kernels::NormWeight::plain, kernels::NormWeight::gemma})
        for (auto [rows, cols] : {std::pair<int64_t, int64_t>{0, 64}, {1, 1}, {3, 7}, {5, 64}, {2, 4096}}) {
          check_case({io, form, rows, cols, true, false, 1}, rng);
          check_case({io, form, rows, cols, true, true, 1}, rng);
          check_case({io, form, rows, cols, false, false, 1}, rng);
        }
  });
}

TEST_CASE("fused reduce of k partials + add + RMSNorm equals the unfused all-reduce then add+norm") {
  std::mt19937 rng(11);
  seam::test::for_each_isa([&] {
    for (DType io : kIoTypes)
      for (int k : {1, 2, 3, 4, 8}) check_case({io, kernels::NormWeight::plain, 6, 96, true, false, k}, rng);
  });
}

TEST_CASE("both instruction sets give bit-identical results") {
  std::mt19937 rng(13);
  for (DType io : kIoTypes) {
    HostTensor x(io, 9, 1000), residual(io, 9, 1000), weight(io, 1, 1000);
    x.fill_random(rng);
    residual.fill_random(rng);
    weight.fill_random(rng);
    const kernels::RmsNormSpec spec{weight.view.data, io, kernels::NormWeight::gemma, 1e-6f};
    std::vector<HostTensor> results;
    seam::test::for_each_isa([&] {
      HostTensor r = residual;
      results.emplace_back(io, 9, 1000);
      kernels::add_rms_norm(x.view, r.view, nullptr, spec, results.back().view);
    });
    for (size_t i = 1; i < results.size(); ++i)
      REQUIRE(std::memcmp(results[i].storage.data(), results[0].storage.data(), results[0].view.bytes()) == 0);
  }
}

TEST_CASE("the norm reads the unrounded FP32 sum, not the rounded residual") {
  std::mt19937 rng(3);
  const int64_t cols = 4096;
  HostTensor h(DType::bf16, 1, cols), residual(DType::bf16, 1, cols), weight(DType::bf16, 1, cols), out(DType::bf16, 1, cols);
  h.fill_random(rng);
  residual.fill_random(rng, -50.0f, 50.0f);
  weight.fill(1.0f);
  // The same computation on a separately rounded snapshot of the residual.
  HostTensor snapshot = residual, snapshot_out(DType::bf16, 1, cols);
  for (int64_t c = 0; c < cols; ++c) seam::test::set(snapshot.view, 0, c, snapshot.at(0, c) + h.at(0, c));
  kernels::RmsNormSpec spec{weight.view.data, DType::bf16, kernels::NormWeight::plain, 1e-6f};
  kernels::add_rms_norm(h.view, residual.view, nullptr, spec, out.view);
  kernels::rms_norm(snapshot.view, spec, snapshot_out.view);
  int differing = 0;
  for (int64_t c = 0; c < cols; ++c) {
    REQUIRE(residual.at(0, c) == snapshot.at(0, c));
    differing += out.at(0, c) != snapshot_out.at(0, c);
  }
  CHECK(differing > 0);
}

TEST_CASE("the output may overwrite the input in place") {
  std::mt19937 rng(5);
  HostTensor h(DType::f16, 4, 33), residual(DType::f16, 4, 33), weight(DType::f32, 1, 33), out(DType::f16, 4, 33);
  h.fill_random(rng);
  residual.fill_random(rng);
  weight.fill_random(rng);
  HostTensor h2 = h, residual2 = residual;
  kernels::RmsNormSpec spec{weight.view.data, DType::f32, kernels::NormWeight::gemma, 1e-6f};
  kernels::add_rms_norm(h.view, residual.view, nullptr, spec, out.view);
  kernels::add_rms_norm(h2.view, residual2.view, nullptr, spec, h2.view);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 33; ++c) REQUIRE(h2.at(r, c) == out.at(r, c));
}

TEST_CASE("mismatched dtypes and shapes are rejected") {
  HostTensor h(DType::bf16, 2, 8), residual_f32(DType::f32, 2, 8), residual_short(DType::bf16, 1, 8),
      out(DType::bf16, 2, 8), weight(DType::bf16, 1, 8), ints(DType::i32, 2, 8);
  kernels::RmsNormSpec spec{weight.view.data, DType::bf16, kernels::NormWeight::plain, 1e-6f};
  CHECK_THROWS_AS(kernels::add_rms_norm(h.view, residual_f32.view, nullptr, spec, out.view), TypeError);
  CHECK_THROWS_AS(kernels::add_rms_norm(h.view, residual_short.view, nullptr, spec, out.view), ValueError);
  CHECK_THROWS_AS(kernels::rms_norm(ints.view, spec, ints.view), TypeError);
}
