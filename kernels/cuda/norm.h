// CUDA add + RMSNorm kernels (the same math and order as kernels/norm and kernels/quant on host),
// launched on a stream. Tensors are CUDA device views; the norm's weight is a device pointer.
// Every function returns the launch status (cudaSuccess or the error) and never synchronises.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/norm/rms_norm.h"
#include "kernels/quant/norm_quant.h"
#include "seam/tensor.h"

namespace seam::kernels::cuda {

/// out = RMSNorm(x).
cudaError_t rms_norm(const Tensor& x, const RmsNormSpec& norm, const Tensor& out, cudaStream_t stream);

/// residual := x + residual [+ extra] (rounded, in place); out := RMSNorm of the FP32 sum.
cudaError_t add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                         const Tensor& out, cudaStream_t stream);

/// The per-token FP8 read of rms_norm (out.scales is a device array of rows floats).
cudaError_t rms_norm_fp8(const Tensor& x, const RmsNormSpec& norm, const Fp8Rows& out, cudaStream_t stream);

/// The per-token FP8 read of add_rms_norm (out.scales is a device array of rows floats).
cudaError_t add_rms_norm_fp8(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                             const Fp8Rows& out, cudaStream_t stream);

}  // namespace seam::kernels::cuda
