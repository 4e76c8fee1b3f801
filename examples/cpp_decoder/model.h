// The example decoder's model: per layer a row-parallel attention output projection and an FFN
// (silu), a norm weight per stage and a final one, seeded so that every rank holds the same
// weights. Each rank computes its share of the columns (rank r of k); k = 1 is the whole model.
#pragma once

#include <seam/tensor.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace cpp_decoder {

constexpr int64_t kHidden = 64, kFfn = 96;
constexpr int kLayers = 2;

using Rows = std::vector<float>;

inline Rows random_rows(unsigned seed, int64_t n, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.f, scale);
  Rows v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

inline seam::Tensor view(Rows& v, int64_t rows, int64_t cols) {
  return seam::Tensor::contiguous(v.data(), seam::DType::f32, rows, cols);
}
inline float at(const seam::Tensor& t, int64_t r, int64_t c) {
  return static_cast<const float*>(t.data)[r * t.row_stride + c];
}

// The model's weights, the same on every rank; each rank computes its share of the columns.
struct Model {
  std::vector<Rows> attn, up, down, norms;
  Model() {
    for (int l = 0; l < kLayers; ++l) {
      attn.push_back(random_rows(100 + l, kHidden * kHidden, 0.1f));
      up.push_back(random_rows(200 + l, kHidden * kFfn, 0.1f));
      down.push_back(random_rows(300 + l, kFfn * kHidden, 0.1f));
    }
    for (int s = 0; s <= 2 * kLayers; ++s) {
      norms.push_back(random_rows(400 + s, kHidden, 0.1f));
      for (float& w : norms.back()) w += 1.f;
    }
  }

  // The norm weight of stage s (the final norm's at 2 kLayers), 1 x kHidden.
  seam::Tensor norm_weight(int s) { return view(norms[static_cast<size_t>(s)], 1, kHidden); }

  // Rank r of k: a row-parallel output projection, y = x[:, cols_r] W[cols_r, :] (a partial sum).
  void attention(int l, const seam::Tensor& x, Rows& y, int r = 0, int k = 1) const {
    const Rows& w = attn[static_cast<size_t>(l)];
    const int64_t begin = kHidden * r / k, end = kHidden * (r + 1) / k;
    for (int64_t t = 0; t < x.rows; ++t)
      for (int64_t j = 0; j < kHidden; ++j) {
        float sum = 0.f;
        for (int64_t c = begin; c < end; ++c) sum += at(x, t, c) * w[static_cast<size_t>(c * kHidden + j)];
        y[static_cast<size_t>(t * kHidden + j)] = sum;
      }
  }
  // Rank r of k: y = silu(x W1[:, f_r]) W2[f_r, :] (a partial sum over the FFN columns f_r).
  void ffn(int l, const seam::Tensor& x, Rows& y, int r = 0, int k = 1) const {
    const Rows &w1 = up[static_cast<size_t>(l)], &w2 = down[static_cast<size_t>(l)];
    const int64_t begin = kFfn * r / k, end = kFfn * (r + 1) / k;
    Rows mid(static_cast<size_t>(kFfn));
    for (int64_t t = 0; t < x.rows; ++t) {
      for (int64_t f = begin; f < end; ++f) {
        float sum = 0.f;
        for (int64_t c = 0; c < kHidden; ++c) sum += at(x, t, c) * w1[static_cast<size_t>(c * kFfn + f)];
        mid[static_cast<size_t>(f)] = sum / (1.f + std::exp(-sum));
      }
      for (int64_t j = 0; j < kHidden; ++j) {
        float sum = 0.f;
        for (int64_t f = begin; f < end; ++f) sum += mid[static_cast<size_t>(f)] * w2[static_cast<size_t>(f * kHidden + j)];
        y[static_cast<size_t>(t * kHidden + j)] = sum;
      }
    }
  }
};

}  // namespace cpp_decoder
