// Hyper-connection residual math on host buffers (MHC): the residual is n streams side by side,
// rows x (n · H). FP32 arithmetic, each result rounded once to the activation dtype.
//   pre:    x = Σ_i pre[i] · X_i
//   post:   X'_i = Σ_j res[i][j] · X_j + post[i] · out   (j ascending, then the output term)
//   expand: X_i = h;   contract: h = Σ_i X_i / n
#pragma once

#include <span>

#include "seam/tensor.h"

namespace seam::kernels {

/// Most streams an expanded residual may hold.
inline constexpr int kMaxHyperStreams = 16;

/// Stream i (rows x H) of an expanded residual of n streams (a strided view).
Tensor hyper_stream(const Tensor& streams, int n, int i);

/// streams := n copies of h.
void hyper_expand(const Tensor& h, const Tensor& streams, int n);

/// dst := Σ_i weights[i] · X_i (pre with the layer's coefficients, contract with 1/n each).
void hyper_combine(const Tensor& streams, int n, std::span<const float> weights, const Tensor& dst);

/// X'_i := Σ_j res[i·n + j] · X_j + post[i] · out, in place.
void hyper_post(const Tensor& streams, int n, const Tensor& out, std::span<const float> res, std::span<const float> post);

}  // namespace seam::kernels
