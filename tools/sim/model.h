// The simulated decoder stack: deterministic random weights (seeded, identical on every rank) and
// each stage's compute as a sum of per-shard terms, so one rank's share is a partial sum and the
// shares of a group add up to the full result:
//   A / M  attention / mixer: a per-token linear H -> H, row-parallel over attention TP (rank t
//          owns input columns [t H/k, (t+1) H/k)). No token mixing: rows may be in any order.
//   F      dense FFN: silu(x W1) W2, W1 column-parallel and W2 row-parallel over TP.
//   E      expert FFN: each token routed to two experts (by its global token id, with gate
//          weights), experts sharded over EP and each expert's intermediate columns over MoE-TP;
//          a rank applies its share of the experts it owns.
// Everything is computed in FP32 from the activation dtype and rounded once per output (and per
// FFN intermediate); the single-process reference runs the same functions with one shard. With a
// grid (bf16 runs), partials and embeddings are rounded to multiples of it, so that every sum the
// parallel run forms is exact in any order and its result can be compared bit for bit.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "seam/tensor.h"

namespace seam::sim {

/// Sizes and seed of the stack.
struct ModelConfig {
  std::string stages;          ///< one letter per stage: A, F, E, M
  int64_t hidden = 64;
  int64_t ffn_hidden = 96;     ///< dense FFN intermediate size (divisible by tp)
  int64_t experts = 4;         ///< number of experts (divisible by EP)
  int64_t expert_hidden = 32;  ///< intermediate size of one expert
  uint64_t seed = 1;
  DType dtype = DType::f32;
  float eps = 1e-6f;
  float grid = 0.0f;           ///< partials and embeddings are rounded to multiples of this (0: not)
};

/// A stage's share of the work: shard `index` of `count` (attention input columns, dense FFN
/// intermediate columns, experts) and, for experts, intermediate-column shard `inner` of `inner_count`.
struct Shard {
  int index = 0;
  int count = 1;
  int inner = 0;
  int inner_count = 1;
};

/// How many shards each stage kind's work is cut into (indices 0), from the topology.
struct StageShards {
  Shard attention, dense, experts;
  Shard of(char kind) const { return kind == 'F' ? dense : kind == 'E' ? experts : attention; }
};

class Model {
 public:
  explicit Model(const ModelConfig& config);
  const ModelConfig& config() const { return config_; }
  int64_t stage_count() const { return static_cast<int64_t>(config_.stages.size()); }
  char kind(int64_t stage) const { return config_.stages[static_cast<size_t>(stage)]; }

  /// Input norm weight of `stage` (FP32, hidden elements); stage == stage_count() is the final norm.
  Tensor norm_weight(int64_t stage) const;
  /// The embedding of global token `token` written into row `row` of `out`.
  void embed(int64_t token, const Tensor& out, int64_t row) const;

  /// out := this shard's partial of stage `stage` applied to `input`. token_ids[r] is the global
  /// token of row r, or -1 for a padding row (its output is zero).
  void compute(int64_t stage, const Tensor& input, std::span<const int64_t> token_ids, Shard shard,
               const Tensor& out) const;
  /// out := the whole stage as the parallel run forms it: every shard's partial (shards.count x
  /// shards.inner_count), each rounded to the activation dtype, summed in FP32 in shard order and
  /// rounded once. Returns the largest |residual| + sum of |partials| over the elements: no order
  /// of adding them (and the residual) passes a larger magnitude.
  float compute_sum(int64_t stage, const Tensor& input, std::span<const int64_t> token_ids, Shard shards,
                    const Tensor& out, const Tensor& residual) const;
  /// Sets ModelConfig::grid.
  void use_grid(float grid) { config_.grid = grid; }

 private:
  void linear(int64_t stage, const Tensor& input, Shard shard, const Tensor& out) const;
  void dense_ffn(int64_t stage, const Tensor& input, Shard shard, const Tensor& out) const;
  void expert_ffn(int64_t stage, const Tensor& input, std::span<const int64_t> token_ids, Shard shard,
                  const Tensor& out) const;

  ModelConfig config_;
  std::vector<std::vector<float>> norms_;    ///< per stage, then the final norm
  std::vector<std::vector<float>> weights_;  ///< per stage: A/M W; F W1|W2; E each expert's W1|W2
};

/// Reads element (r, c) of an fp32/bf16 tensor as FP32; stores a value rounded to the tensor's dtype.
float load(const Tensor& t, int64_t r, int64_t c);
void store(const Tensor& t, int64_t r, int64_t c, float v);

}  // namespace seam::sim
