// CUDA element-wise helper of the residual path (the device form of kernels/norm/elementwise.h's
// add_inplace: FP32 add, one rounding to the I/O dtype), launched on a stream.
#pragma once

#include <cuda_runtime_api.h>

#include "seam/tensor.h"

namespace seam::kernels::cuda {

/// dst := round(f32(dst) + f32(src)); same dtype and shape, rows may be strided. Returns the
/// launch status and never synchronises.
cudaError_t add_inplace(const Tensor& dst, const Tensor& src, cudaStream_t stream);

}  // namespace seam::kernels::cuda
