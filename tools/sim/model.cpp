#include <cstdint>
#include "tools/sim/model.h"

#include <algorithm>
#include <cmath>

#include "seam/errors.h"

namespace seam::sim {

namespace {

// splitmix64: a stateless hash, so every rank draws the same value for (seed, stream, index).
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1).
float uniform(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t h = mix(mix(seed * 0x100000001b3ull + stream) ^ index);
  return static_cast<float>(static_cast<double>(h >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

std::vector<float> draw(uint64_t seed, uint64_t stream, int64_t n, float scale, float offset = 0.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = offset + scale * uniform(seed, stream, static_cast<uint64_t>(i));
  return v;
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// The part [begin, end) of n items owned by shard s.
std::pair<int64_t, int64_t> part(int64_t n, int index, int count) { return {n * index / count, n * (index + 1) / count}; }

// Two experts and their gates per token, from the token id alone (routing never depends on
// values, so rounding differences cannot change it).
struct Route {
  int64_t expert[2];
  float gate[2];
};
Route route(uint64_t seed, int64_t stage, int64_t token, int64_t experts) {
  const uint64_t h = mix(mix(seed ^ 0xe0e0) + static_cast<uint64_t>(stage) * 7919 + static_cast<uint64_t>(token));
  Route r;
  r.expert[0] = static_cast<int64_t>(h % static_cast<uint64_t>(experts));
  r.expert[1] = (r.expert[0] + 1 + static_cast<int64_t>((h >> 20) % static_cast<uint64_t>(experts - 1))) % experts;
  r.gate[0] = 0.25f + 0.5f * static_cast<float>((h >> 40) & 0xff) / 255.0f;
  r.gate[1] = 1.0f - r.gate[0];
  return r;
}

// h := silu(x W1[:, cols]) rounded to the activation dtype, then out += h W2[cols, :] (FP32).
void ffn_rows(const float* x, const float* w1, const float* w2, int64_t hidden, int64_t inner, int64_t c0, int64_t c1,
              DType dtype, float scale, std::vector<float>& acc) {
  for (int64_t c = c0; c < c1; ++c) {
    float pre = 0.0f;
    for (int64_t j = 0; j < hidden; ++j) pre += x[j] * w1[j * inner + c];
    float h = silu(pre);
    if (dtype == DType::bf16) h = bf16_to_float(float_to_bf16(h));
    h *= scale;
    for (int64_t j = 0; j < hidden; ++j) acc[static_cast<size_t>(j)] += h * w2[c * hidden + j];
  }
}

std::vector<float> row_of(const Tensor& t, int64_t r) {
  std::vector<float> v(static_cast<size_t>(t.cols));
  for (int64_t c = 0; c < t.cols; ++c) v[static_cast<size_t>(c)] = load(t, r, c);
  return v;
}

// v rounded to a multiple of `grid` (0: unchanged).
float on_grid(float v, float grid) { return grid > 0 ? std::nearbyint(v / grid) * grid : v; }

void store_row(const Tensor& t, int64_t r, const std::vector<float>& v, float grid) {
  for (int64_t c = 0; c < t.cols; ++c) store(t, r, c, on_grid(v[static_cast<size_t>(c)], grid));
}

}  // namespace

float load(const Tensor& t, int64_t r, int64_t c) {
  const void* row = t.row(r);
  return t.dtype == DType::bf16 ? bf16_to_float(static_cast<const uint16_t*>(row)[c]) : static_cast<const float*>(row)[c];
}

void store(const Tensor& t, int64_t r, int64_t c, float v) {
  void* row = t.row(r);
  if (t.dtype == DType::bf16)
    static_cast<uint16_t*>(row)[c] = float_to_bf16(v);
  else
    static_cast<float*>(row)[c] = v;
}

Model::Model(const ModelConfig& config) : config_(config) {
  if (config.dtype != DType::f32 && config.dtype != DType::bf16) throw ValueError("the simulator runs fp32 or bf16");
  const int64_t h = config.hidden;
  // Every rank draws the whole model: refuse sizes whose weights would not fit (1 GiB of floats).
  constexpr int64_t kMaxWeights = int64_t{1} << 28;
  int64_t weights = 0;
  for (int64_t s = 0; s < stage_count() && weights <= kMaxWeights; ++s)
    weights += kind(s) == 'F' ? 2 * h * config.ffn_hidden : kind(s) == 'E' ? config.experts * 2 * h * config.expert_hidden : h * h;
  if (weights > kMaxWeights)
    throw ValueError("--hidden x --layers (x --tp): the model's weights would take more than 1 GiB per rank");
  for (int64_t s = 0; s <= stage_count(); ++s) norms_.push_back(draw(config.seed, 1000 + s, h, 0.2f, 1.0f));
  for (int64_t s = 0; s < stage_count(); ++s) {
    const uint64_t stream = 2000 + static_cast<uint64_t>(s);
    switch (kind(s)) {
      case 'A':
      case 'M': weights_.push_back(draw(config.seed, stream, h * h, 1.0f / std::sqrt(static_cast<float>(h)))); break;
      case 'F': weights_.push_back(draw(config.seed, stream, 2 * h * config.ffn_hidden, 1.0f / std::sqrt(static_cast<float>(h)))); break;
      case 'E':
        weights_.push_back(draw(config.seed, stream, config.experts * 2 * h * config.expert_hidden,
                                1.0f / std::sqrt(static_cast<float>(h))));
        break;
      default: throw ValueError(std::string("unknown stage letter '") + kind(s) + "' (use A, F, E, M)");
    }
  }
}

Tensor Model::norm_weight(int64_t stage) const {
  auto& w = norms_[static_cast<size_t>(stage)];
  return Tensor::contiguous(const_cast<float*>(w.data()), DType::f32, 1, config_.hidden);
}

void Model::embed(int64_t token, const Tensor& out, int64_t row) const {
  for (int64_t c = 0; c < config_.hidden; ++c)
    store(out, row, c, on_grid(uniform(config_.seed, 7, static_cast<uint64_t>(token * config_.hidden + c)), config_.grid));
}

void Model::compute(int64_t stage, const Tensor& input, std::span<const int64_t> token_ids, Shard shard,
                    const Tensor& out) const {
  if (input.rows != out.rows || static_cast<int64_t>(token_ids.size()) != input.rows)
    throw ValueError("simulated compute: input, output and token ids differ in rows");
  switch (kind(stage)) {
    case 'A':
    case 'M': return linear(stage, input, shard, out);
    case 'F': return dense_ffn(stage, input, shard, out);
    case 'E': return expert_ffn(stage, input, token_ids, shard, out);
  }
}

float Model::compute_sum(int64_t stage, const Tensor& input, std::span<const int64_t> token_ids, Shard shards,
                         const Tensor& out, const Tensor& residual) const {
  Buffer storage(static_cast<size_t>(out.rows * out.cols) * dtype_size(out.dtype) + 64);
  const Tensor partial = storage.as_tensor(out.dtype, out.rows, out.cols);
  const size_t n = static_cast<size_t>(out.rows * out.cols);
  std::vector<float> sum(n, 0.0f), magnitude(n, 0.0f);
  for (int i = 0; i < shards.count; ++i)
    for (int j = 0; j < shards.inner_count; ++j) {
      compute(stage, input, token_ids, {i, shards.count, j, shards.inner_count}, partial);
      for (int64_t r = 0; r < out.rows; ++r)
        for (int64_t c = 0; c < out.cols; ++c) {
          const float p = load(partial, r, c);
          sum[static_cast<size_t>(r * out.cols + c)] += p;
          magnitude[static_cast<size_t>(r * out.cols + c)] += std::fabs(p);
        }
    }
  float largest = 0.0f;
  for (int64_t r = 0; r < out.rows; ++r)
    for (int64_t c = 0; c < out.cols; ++c) {
      store(out, r, c, sum[static_cast<size_t>(r * out.cols + c)]);
      largest = std::max(largest, magnitude[static_cast<size_t>(r * out.cols + c)] + std::fabs(load(residual, r, c)));
    }
  return largest;
}

void Model::linear(int64_t stage, const Tensor& input, Shard shard, const Tensor& out) const {
  const int64_t h = config_.hidden;
  const float* w = weights_[static_cast<size_t>(stage)].data();
  const auto [j0, j1] = part(h, shard.index, shard.count);
  for (int64_t r = 0; r < input.rows; ++r) {
    const std::vector<float> x = row_of(input, r);
    std::vector<float> acc(static_cast<size_t>(h), 0.0f);
    for (int64_t j = j0; j < j1; ++j)
      for (int64_t c = 0; c < h; ++c) acc[static_cast<size_t>(c)] += x[static_cast<size_t>(j)] * w[j * h + c];
    store_row(out, r, acc, config_.grid);
  }
}

void Model::dense_ffn(int64_t stage, const Tensor& input, Shard shard, const Tensor& out) const {
  const int64_t h = config_.hidden, inner = config_.ffn_hidden;
  const float* w1 = weights_[static_cast<size_t>(stage)].data();
  const float* w2 = w1 + h * inner;
  const auto [c0, c1] = part(inner, shard.index, shard.count);
  for (int64_t r = 0; r < input.rows; ++r) {
    const std::vector<float> x = row_of(input, r);
    std::vector<float> acc(static_cast<size_t>(h), 0.0f);
    ffn_rows(x.data(), w1, w2, h, inner, c0, c1, config_.dtype, 1.0f, acc);
    store_row(out, r, acc, config_.grid);
  }
}

void Model::expert_ffn(int64_t stage, const Tensor& input, std::span<const int64_t> token_ids, Shard shard,
                       const Tensor& out) const {
  const int64_t h = config_.hidden, inner = config_.expert_hidden;
  const auto [e0, e1] = part(config_.experts, shard.index, shard.count);
  const auto [c0, c1] = part(inner, shard.inner, shard.inner_count);
  for (int64_t r = 0; r < input.rows; ++r) {
    std::vector<float> acc(static_cast<size_t>(h), 0.0f);
    const int64_t token = token_ids[static_cast<size_t>(r)];
    if (token >= 0) {
      const std::vector<float> x = row_of(input, r);
      const Route rt = route(config_.seed, stage, token, config_.experts);
      for (int k = 0; k < 2; ++k) {
        const int64_t e = rt.expert[k];
        if (e < e0 || e >= e1) continue;
        const float* w1 = weights_[static_cast<size_t>(stage)].data() + e * 2 * h * inner;
        ffn_rows(x.data(), w1, w1 + h * inner, h, inner, c0, c1, config_.dtype, rt.gate[k], acc);
      }
    }
    store_row(out, r, acc, config_.grid);
  }
}

}  // namespace seam::sim
