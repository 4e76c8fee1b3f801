// Shared by the StageRunner tests run under mpirun: the stage compute (a scale per stage, split
// into exact partial sums over its group), token embeddings, the single-process reference, and the
// stacks that need their own driver (LongCat's shortcut, MHC).
#pragma once

#include <cstdint>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/quant/fp8.h"
#include "kernels/quant/norm_quant.h"
#include "seam/tensor.h"
#include "runtime/boundary/policy.h"
#include "seam/communicator.h"

namespace seam::boundary::runner_test {

inline constexpr int64_t kHidden = 8;
inline int g_rank = -1;

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "[rank %d] %s\n", g_rank, what.c_str());
  std::exit(1);
}

// Partial-sum weights that add up to one exactly (binary fractions), per group size.
inline float weight(int size, int rank) {
  static const std::vector<std::vector<float>> w = {{1.f}, {.25f, .75f}, {}, {.125f, .25f, .375f, .25f}};
  return w.at(size - 1).at(rank);
}

// The embedding of token i of DP replica d.
inline float embedding(int d, int64_t i, int64_t c) { return std::sin(0.37f * float(d * 101 + i * 13 + c)) + 0.5f; }

// Stage compute: a scale per stage letter; its partial over its sum group is the scale times this
// rank's weight, summed by compute only when the exit did not ask it to skip.
inline float scale(char letter) { return letter == 'A' ? 3.f : letter == 'M' ? 0.5f : letter == 'F' ? 2.f : 1.5f; }

inline std::vector<float> rms_norm(const std::vector<float>& x) {
  double sq = 0;
  for (float v : x) sq += double(v) * v;
  const float inv = 1.f / std::sqrt(float(sq / x.size()) + 1e-6f);
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv;
  return out;
}

// FP8 per-token quantisation and back, as NORM_QUANT_READ's fp8_per_token format reads.
inline std::vector<float> fake_fp8(const std::vector<float>& y) {
  float absmax = 0;
  for (float v : y) absmax = std::max(absmax, std::fabs(v));
  const float scale = std::max(absmax / 448.f, kernels::kFp8MinScale);
  std::vector<float> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) out[i] = kernels::fp8_e4m3_to_float(kernels::float_to_fp8_e4m3(y[i] * (1.f / scale))) * scale;
  return out;
}

// The single-process reference for one token: residual r; each stage adds scale * norm(r).
// residuals[s] is r as stage s reads it, then the final residual, then the final norm's output.
// (Every stage adds a multiple of norm(r), so the final norm's output alone cannot tell a residual
// summed twice from the right one: compare the residuals too.)
inline std::vector<std::vector<float>> reference(const std::string& pattern, int d, int64_t i, bool transform, bool fp8 = false) {
  std::vector<std::vector<float>> residuals;
  std::vector<float> r(kHidden);
  for (int64_t c = 0; c < kHidden; ++c) r[c] = embedding(d, i, c);
  for (char letter : pattern) {
    residuals.push_back(r);
    const std::vector<float> in = fp8 && letter == 'A' ? fake_fp8(rms_norm(r)) : rms_norm(r);
    const float doubled = transform && letter != 'M' ? 2.f : 1.f;
    for (int64_t c = 0; c < kHidden; ++c) r[c] += doubled * scale(letter) * in[c];
  }
  residuals.push_back(r);
  residuals.push_back(rms_norm(r));
  return residuals;
}

inline bool close(float got, float expected, float tolerance = 1e-4f) {
  return std::fabs(got - expected) <= tolerance * (1.f + std::fabs(expected));
}

/// A one-row weight of ones for every norm.
struct Ones {
  Buffer storage{kHidden * 4};
  Tensor tensor = storage.as_tensor(DType::f32, 1, kHidden);
  Ones() {
    for (int64_t c = 0; c < kHidden; ++c) static_cast<float*>(tensor.data)[c] = 1.f;
  }
};

/// LongCat's shortcut (a prepared branch merged with the MoE's output) with `attn_dp` replicas,
/// optionally with an all-to-all MoE on local rows (the branch input then gathers DP).
void run_longcat(const std::shared_ptr<comm::Communicator>& world, int attn_dp,
                 PaddingMode padding = PaddingMode::SUM_LEN, bool a2a = false);
/// Two MHC layers (nonlinear attention update, FFN written at the producer), on an input-scattered
/// batch or with a configured dense-FFN TP size (0: tp) when asked.
void run_mhc(const std::shared_ptr<comm::Communicator>& world, int attn_dp, ReductionPolicy policy, PaddingMode padding,
             bool input_scattered = false, int dense_tp = 0);

}  // namespace seam::boundary::runner_test
