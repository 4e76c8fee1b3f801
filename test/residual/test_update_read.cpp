// The update/read math of §5 through the stream (the numeric part of test_declared_decoder_boundary):
// the plain add + RMSNorm read in the reference's FP32 order, the FP8 read, a nonlinear update's
// two-step order, MHC and post-norm — each against a reference written here from the definitions.
#include <cstdint>
#include <doctest/doctest.h>

#include <vector>

#include "kernels/quant/norm_quant.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "runtime/residual/mhc.h"
#include "runtime/residual/post_norm.h"
#include "test/residual/stream_fixtures.h"

using namespace seam;
using namespace seam::residual;
using namespace seam::test;

namespace {

// The reference add+RMSNorm of one bf16 row set with unit-free weights: (residual', output).
std::pair<std::vector<float>, std::vector<float>> reference_add_norm(const HostTensor& h, const HostTensor& residual,
                                                                     const HostTensor& weight, float eps, int64_t r) {
  std::vector<float> x, w;
  for (int64_t c = 0; c < h.view.cols; ++c) {
    x.push_back(h.at(r, c) + residual.at(r, c));
    w.push_back(weight.at(0, c));
  }
  const RefRow row = reference_norm_row(x, w, eps, h.view.dtype);
  return {row.residual, row.out};
}

struct PendingBatch {
  PendingBatch(const HostTensor& initial_residual, const Tensor& output, const StageUpdate& update)
      : residual(initial_residual) {
    start(batch);
    read_input(LayerOutput(residual.view), batch, identity, unit.norm);
    h = current(batch).leave(ProducerOutput::complete_tensor(output), update);
  }
  ForwardBatch batch;
  HostTensor residual;
  IdentityRead identity;
  UnitNorm unit;
  LayerOutput h;
};

}  // namespace

TEST_CASE("a plain add + norm read runs in the reference's FP32 order") {
  std::mt19937 rng(21);
  const int64_t rows = 3, cols = 512;
  HostTensor h(DType::bf16, rows, cols), residual(DType::bf16, rows, cols), weight(DType::bf16, 1, cols);
  h.fill_random(rng);
  residual.fill_random(rng, -20.0f, 20.0f);
  weight.fill_random(rng);
  const HostTensor residual_before = residual;
  RmsNorm norm(weight.view, 1e-5f);
  PendingBatch p(residual, h.view, add_update());
  const StageInput input = read_input(p.h, p.batch, norm_read(), norm);
  CHECK_FALSE(input.quantized());
  for (int64_t r = 0; r < rows; ++r) {
    const auto [want_residual, want_out] = reference_add_norm(h, residual_before, weight, 1e-5f, r);
    for (int64_t c = 0; c < cols; ++c) {
      REQUIRE(get(current(p.batch).residual(), r, c) == want_residual[c]);
      REQUIRE(ulps(DType::bf16, get(input.values, r, c), want_out[c]) <= 1.0);
    }
  }
  CHECK(current(p.batch).residual().data == p.residual.view.data);  // updated in place
}

TEST_CASE("the stack's first read takes the input as the residual") {
  std::mt19937 rng(2);
  HostTensor h(DType::f32, 2, 16), weight(DType::f32, 1, 16), expected(DType::f32, 2, 16);
  h.fill_random(rng);
  weight.fill_random(rng);
  RmsNorm norm(weight.view, 1e-6f, kernels::NormWeight::gemma);
  ForwardBatch batch;
  start(batch);
  const StageInput input = read_input(LayerOutput(h.view), batch, norm_quant_read(), norm);
  CHECK(current(batch).residual().data == h.view.data);
  kernels::rms_norm(h.view, norm.spec(), expected.view);
  for (int64_t c = 0; c < 16; ++c) CHECK(get(input.values, 1, c) == expected.at(1, c));
}

TEST_CASE("the FP8 read quantises the fused add + norm with its post-residual addition") {
  std::mt19937 rng(4);
  const int64_t rows = 2, cols = 64;
  HostTensor h(DType::bf16, rows, cols), residual(DType::bf16, rows, cols), extra(DType::bf16, rows, cols),
      weight(DType::bf16, 1, cols), q(DType::fp8_e4m3, rows, cols);
  h.fill_random(rng);
  residual.fill_random(rng);
  extra.fill_random(rng);
  weight.fill_random(rng);
  HostTensor residual_copy = residual;
  std::vector<float> scales(rows);
  RmsNorm norm(weight.view, 1e-6f);
  kernels::add_rms_norm_fp8(h.view, residual_copy.view, &extra.view, norm.spec(), {q.view, scales.data()});

  PendingBatch p(residual, h.view, add_update());
  const StageInput input = read_input(p.h, p.batch, norm_quant_read(), norm,
                                      {.quant = QuantFormat::fp8_per_token, .post_residual_addition = &extra.view});
  REQUIRE(input.quantized());
  CHECK(input.values.dtype == DType::fp8_e4m3);
  for (int64_t r = 0; r < rows; ++r) {
    CHECK(input.scales[r] == scales[r]);
    for (int64_t c = 0; c < cols; ++c) {
      REQUIRE(static_cast<const uint8_t*>(input.values.row(r))[c] == static_cast<const uint8_t*>(q.view.row(r))[c]);
      REQUIRE(get(current(p.batch).residual(), r, c) == residual_copy.at(r, c));
    }
  }
}

TEST_CASE("NORM_QUANT_READ joins a post-residual addition to a written residual before the norm") {
  std::mt19937 rng(12);
  const int64_t rows = 2, cols = 64;
  HostTensor residual(DType::bf16, rows, cols), extra(DType::bf16, rows, cols), weight(DType::bf16, 1, cols);
  residual.fill_random(rng);
  extra.fill_random(rng);
  weight.fill_random(rng);
  RmsNorm norm(weight.view, 1e-6f);

  HostTensor read_residual = residual;  // the read updates its residual in place
  const ReadResult plain = norm_quant_read().read(read_residual.view, norm, {.post_residual_addition = &extra.view});
  for (int64_t r = 0; r < rows; ++r) {
    const auto [want_residual, want_out] = reference_add_norm(extra, residual, weight, 1e-6f, r);
    for (int64_t c = 0; c < cols; ++c) {
      REQUIRE(get(plain.residual, r, c) == want_residual[c]);
      REQUIRE(ulps(DType::bf16, get(plain.input.values, r, c), want_out[c]) <= 1.0);
    }
  }

  // Quantised: the FP8 norm of residual + extra (here with the residual as the kernel's input).
  HostTensor q(DType::fp8_e4m3, rows, cols), zeros(DType::bf16, rows, cols);
  zeros.fill(0.0f);
  std::vector<float> scales(rows);
  kernels::add_rms_norm_fp8(residual.view, zeros.view, &extra.view, norm.spec(), {q.view, scales.data()});
  HostTensor quant_residual = residual;
  const ReadResult quantised = norm_quant_read().read(
      quant_residual.view, norm, {.quant = QuantFormat::fp8_per_token, .post_residual_addition = &extra.view});
  REQUIRE(quantised.input.quantized());
  for (int64_t r = 0; r < rows; ++r) {
    CHECK(quantised.input.scales[r] == scales[r]);
    for (int64_t c = 0; c < cols; ++c) {
      REQUIRE(static_cast<const uint8_t*>(quantised.input.values.row(r))[c] == static_cast<const uint8_t*>(q.view.row(r))[c]);
      REQUIRE(get(quantised.residual, r, c) == zeros.at(r, c));
    }
  }
}

TEST_CASE("NORM_READ rejects a quantised format and a post-residual addition") {
  HostTensor h = rows_of(1.0f), residual = rows_of(1.0f), extra = rows_of(1.0f);
  UnitNorm unit;
  check_throws_message<NotSupportedError>(
      [&] { norm_read().update_and_read(add_update(), h.view, &residual.view, unit.norm, {.quant = QuantFormat::fp8_per_token}); },
      "a norm read with quant_format='fp8_per_token' or a post-residual addition");
  check_throws_message<NotSupportedError>(
      [&] { norm_read().update_and_read(add_update(), h.view, &residual.view, unit.norm, {.post_residual_addition = &extra.view}); },
      "a norm read with quant_format='' or a post-residual addition");
}

TEST_CASE("a nonlinear update runs as its own step before the norm") {
  HostTensor residual = rows_of(1.0f), out = rows_of(2.0f), weight = rows_of(1.0f, 1);
  RmsNorm norm(weight.view, 0.0f);
  DoubleAddUpdate update;
  PendingBatch p(residual, out.view, update);
  const StageInput input = read_input(p.h, p.batch, norm_read(), norm);
  CHECK(update.runs == 1);
  CHECK(all_equal(current(p.batch).residual(), 5.0f));
  CHECK(all_equal(input.values, 5.0f * (1.0f / std::sqrt(25.0f))));
}

TEST_CASE("an empty batch passes through the norm read") {
  HostTensor residual(DType::bf16, 0, 8), out(DType::bf16, 0, 8), weight(DType::bf16, 1, 8);
  RmsNorm norm(weight.view, 1e-6f);
  PendingBatch p(residual, out.view, add_update());
  const StageInput input = read_input(p.h, p.batch, norm_quant_read(), norm);
  CHECK(input.values.rows == 0);
  CHECK(current(p.batch).state() == ResidualStream::State::written);
}

namespace {

// Hyper-connections for one token, from the definitions (test reference).
using Streams = std::vector<std::vector<float>>;  // [stream][col]

std::vector<float> combine(const Streams& x, const std::vector<float>& w) {
  std::vector<float> out(x[0].size(), 0.0f);
  for (size_t c = 0; c < out.size(); ++c)
    for (size_t i = 0; i < x.size(); ++i) out[c] += w[i] * x[i][c];
  return out;
}

void post(Streams& x, const std::vector<float>& out, const MhcCoefficients& k) {
  const Streams old = x;
  const size_t n = x.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < out.size(); ++c) {
      float acc = 0.0f;
      for (size_t j = 0; j < n; ++j) acc += k.res[i * n + j] * old[j][c];
      x[i][c] = acc + k.post[i] * out[c];
    }
}

std::vector<float> rms(const std::vector<float>& x, float eps) {
  double sq = 0;
  for (float v : x) sq += static_cast<double>(v) * v;
  const float inv = 1.0f / std::sqrt(static_cast<float>(sq / x.size()) + eps);
  std::vector<float> y;
  for (float v : x) y.push_back(v * inv);
  return y;
}

// Compute stand-ins: attention = 3·input, FFN = 0.5·input (row 0 written into a tensor).
void scale_into(const StageInput& in, float k, HostTensor& out) {
  for (int64_t r = 0; r < out.view.rows; ++r)
    for (int64_t c = 0; c < out.view.cols; ++c) set(out.view, r, c, k * get(in.values, r, c));
}

}  // namespace

TEST_CASE("MHC: a two-layer stack matches the hyper-connection reference") {
  const int n = 2;
  const int64_t rows = 2, cols = 8;
  const MhcCoefficients attn{{0.75f, 0.25f}, {0.5f, 0.5f, 0.25f, 0.75f}, {1.0f, 0.5f}};
  const MhcCoefficients ffn{{0.5f, 0.5f}, {1.0f, 0.0f, 0.5f, 0.5f}, {0.25f, 1.0f}};
  MhcLayer first(n, attn, ffn, false), last(n, attn, ffn, true);
  std::mt19937 rng(8);
  HostTensor embedding(DType::f32, rows, cols), attn_out(DType::f32, rows, cols), ffn_out(DType::f32, rows, cols);
  embedding.fill_random(rng);
  UnitNorm attn_norm(cols), ffn_norm(cols), final_norm(cols);

  // Reference for row 0.
  Streams x(n, std::vector<float>(cols));
  for (int i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c) x[i][c] = embedding.at(0, c);

  ForwardBatch batch;
  start(batch);
  LayerOutput h(embedding.view);
  for (MhcLayer* layer : {&first, &last}) {
    const LayerResidual ops = layer->residual();
    StageInput in = read_input(h, batch, *ops.attention_read, attn_norm.norm);
    std::vector<float> want = rms(combine(x, attn.pre), 1e-6f);
    for (int64_t c = 0; c < cols; ++c) REQUIRE(get(in.values, 0, c) == doctest::Approx(want[c]).epsilon(1e-6));
    scale_into(in, 3.0f, attn_out);
    std::vector<float> a(cols);
    for (int64_t c = 0; c < cols; ++c) a[c] = attn_out.at(0, c);
    post(x, a, attn);

    h = current(batch).leave(ProducerOutput::complete_tensor(attn_out.view), *ops.attention_update);
    in = read_input(h, batch, *ops.ffn_read, ffn_norm.norm);
    want = rms(combine(x, ffn.pre), 1e-6f);
    for (int64_t c = 0; c < cols; ++c) REQUIRE(get(in.values, 0, c) == doctest::Approx(want[c]).epsilon(1e-6));
    scale_into(in, 0.5f, ffn_out);
    std::vector<float> f(cols);
    for (int64_t c = 0; c < cols; ++c) f[c] = ffn_out.at(0, c);
    post(x, f, ffn);
    h = write_at_producer(batch, ffn_out.view, *ops.ffn_update);  // the FFN writes the streams itself
  }
  // The last layer contracted the streams: the final norm reads their mean without another add.
  CHECK(h.tensor().cols == cols);
  const std::vector<float> mean = combine(x, {0.5f, 0.5f});
  for (int64_t c = 0; c < cols; ++c) CHECK(get(h.tensor(), 0, c) == doctest::Approx(mean[c]).epsilon(1e-6));
  const Tensor out = residual::norm(h, batch, final_norm.norm);
  const std::vector<float> want = rms(mean, 1e-6f);
  for (int64_t c = 0; c < cols; ++c) CHECK(get(out, 0, c) == doctest::Approx(want[c]).epsilon(1e-6));
}

TEST_CASE("MHC refuses reads it cannot serve") {
  const MhcCoefficients k{{1.0f, 0.0f}, {1.0f, 0.0f, 0.0f, 1.0f}, {1.0f, 1.0f}};
  MhcLayer layer(2, k, k, false);
  const LayerResidual ops = layer.residual();
  HostTensor h = rows_of(1.0f), residual(DType::f32, 2, 8), out = rows_of(1.0f);
  UnitNorm norm;
  check_throws_message<NotSupportedError>([&] { ops.ffn_read->read(residual.view, norm.norm, {}); },
                                          "an MHC FFN input read without its attention");
  check_throws_message<NotSupportedError>(
      [&] { ops.ffn_read->update_and_read(add_update(), h.view, &residual.view, norm.norm, {}); },
      "an MHC FFN input after update=ADD");
  check_throws_message<NotSupportedError>(
      [&] { ops.attention_read->update_and_read(add_update(), h.view, &residual.view, norm.norm, {}); },
      "an MHC layer takes its input written back");
  check_throws_message<NotSupportedError>(
      [&] { ops.attention_read->read(residual.view, norm.norm, {.quant = QuantFormat::fp8_per_token}); },
      "an MHC attention input in quant_format='fp8_per_token'");
  for (const StageUpdate* update : {ops.attention_update, ops.ffn_update})
    check_throws_message<NotSupportedError>([&] { update->require_residual_gather(); },
                                            "Unsupported: h_res/h_post allgather not implemented.");
  add_update().require_residual_gather();  // a plain residual is rows: gathering it is fine
  CHECK_FALSE(ops.attention_update->adds_plainly());
  CHECK_FALSE(ops.attention_update->can_defer_across_layers());
  CHECK(ops.ffn_update->at_producer());
}

TEST_CASE("post-norm: the residual gains the rounded norm of the output; the read is the residual") {
  std::mt19937 rng(6);
  const int64_t rows = 2, cols = 32;
  HostTensor residual(DType::bf16, rows, cols), out(DType::bf16, rows, cols), weight(DType::bf16, 1, cols);
  residual.fill_random(rng, -4.0f, 4.0f);
  out.fill_random(rng);
  weight.fill_random(rng);
  const HostTensor residual_before = residual, out_before = out;
  RmsNorm post(weight.view, 1e-6f);
  PostNormUpdate update(post, false);
  CHECK_FALSE(update.adds_plainly());
  PendingBatch p(residual, out.view, update);
  const StageInput input = read_input(p.h, p.batch, plain_read(), p.unit.norm);
  std::vector<float> w;
  for (int64_t c = 0; c < cols; ++c) w.push_back(weight.at(0, c));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> x;
    for (int64_t c = 0; c < cols; ++c) x.push_back(out_before.at(r, c));
    const RefRow normed = reference_norm_row(x, w, 1e-6f, DType::bf16);
    for (int64_t c = 0; c < cols; ++c) {
      const float want = round_to(DType::bf16, residual_before.at(r, c) + normed.out[c]);
      // One bf16 step allowed where the norm's variance order rounds the other way.
      REQUIRE(ulps(DType::bf16, get(input.values, r, c), want) <= 1.0);
      REQUIRE(get(current(p.batch).residual(), r, c) == get(input.values, r, c));
    }
  }
}
