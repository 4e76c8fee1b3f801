// Manifold-constrained hyper-connections (MHC, §5.3) with per-layer static coefficients: the
// residual is `streams` copies of the hidden state side by side (rows x streams·H, entered by
// expanding the stack's input). Attention reads pre(streams) through its norm; its update mixes
// the streams and adds the output (hc_post: nonlinear for the boundary, never before a sum, not
// across layers); the FFN reads only after that same layer's attention update, and writes its own
// post at the producer — on the last layer contracting the streams back to one hidden state.
#pragma once

#include <cstdint>

#include <vector>

#include "runtime/residual/update_read.h"

namespace seam::residual {

/// One stage's coefficients: pre (streams), res (streams x streams, row-major), post (streams).
struct MhcCoefficients {
  std::vector<float> pre;
  std::vector<float> res;
  std::vector<float> post;
};

class MhcLayer {
 public:
  MhcLayer(int streams, MhcCoefficients attention, MhcCoefficients ffn, bool last_layer);
  MhcLayer(const MhcLayer&) = delete;
  MhcLayer& operator=(const MhcLayer&) = delete;

  /// The layer's read and update operations (they share this layer's state).
  LayerResidual residual() const { return {&attention_read_, &attention_update_, &ffn_read_, &ffn_update_}; }
  int streams() const { return streams_; }

 private:
  class AttentionRead final : public StageRead {
   public:
    explicit AttentionRead(MhcLayer& layer);
    Tensor enter(const Tensor& h) const override;
    ReadResult read(const Tensor& residual, RmsNorm& norm, const ReadOptions& options) const override;
    ReadResult update_and_read(const StageUpdate& update, const Tensor& h, const Tensor* residual, RmsNorm& norm,
                               const ReadOptions& options) const override;

   private:
    MhcLayer& layer_;
  };
  class AttentionUpdate final : public StageUpdate {
   public:
    explicit AttentionUpdate(MhcLayer& layer);
    const char* name() const override { return "MHC attention"; }
    Tensor update(const Tensor& h, const Tensor& residual) const override;
    void require_residual_gather() const override;

   private:
    MhcLayer& layer_;
  };
  class FfnRead final : public StageRead {
   public:
    explicit FfnRead(MhcLayer& layer);
    ReadResult read(const Tensor& residual, RmsNorm& norm, const ReadOptions& options) const override;
    ReadResult update_and_read(const StageUpdate& update, const Tensor& h, const Tensor* residual, RmsNorm& norm,
                               const ReadOptions& options) const override;

   private:
    MhcLayer& layer_;
  };
  class FfnUpdate final : public StageUpdate {
   public:
    explicit FfnUpdate(MhcLayer& layer);
    const char* name() const override { return "MHC FFN"; }
    Tensor update(const Tensor& h, const Tensor& residual) const override;
    void require_residual_gather() const override;

   private:
    MhcLayer& layer_;
  };

  /// pre(streams) with `c`, normalised: the stage's compute input.
  Tensor read_streams(const Tensor& streams, const MhcCoefficients& c, RmsNorm& norm);
  /// A rows x cols workspace of dtype (grown on demand).
  static Tensor workspace(Buffer& buffer, DType dtype, int64_t rows, int64_t cols);

  int streams_;
  MhcCoefficients attention_, ffn_;
  bool last_layer_;
  Buffer expanded_, combined_, contracted_;
  AttentionRead attention_read_{*this};
  AttentionUpdate attention_update_{*this};
  FfnRead ffn_read_{*this};
  FfnUpdate ffn_update_{*this};
};

}  // namespace seam::residual
