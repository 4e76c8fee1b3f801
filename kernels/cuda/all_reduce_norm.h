// The fused all-reduce + residual add + RMSNorm over peer-mapped workspaces: each block copies its
// rows of this rank's partial into the rank's workspace, the ranks meet (PeerSync), every block
// sums its rows' partials from every workspace in rank order in FP32, rounds the sum to the
// activation dtype, adds the residual and normalises — the same bits as an all-reduce followed by
// add_rms_norm — and the ranks meet again before a workspace is reused.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/cuda/peer_sync.h"
#include "kernels/norm/rms_norm.h"
#include "kernels/quant/norm_quant.h"
#include "seam/tensor.h"

namespace seam::kernels::cuda {

/// Every rank's workspace data area, mapped here, and where this call's rows start in it
/// (elements); rows are stored contiguously (cols apart).
struct RowWorkspaces {
  void* ws[kMaxRanks] = {};
  size_t offset = 0;
};

/// residual := round(Σ partials) + residual (rounded, in place); out := RMSNorm of the FP32 sum,
/// or its per-token FP8 read where fp8_out is given (then `out` is ignored). Collective: every rank
/// of `sync` launches it with the same shape and `blocks`. The workspace must hold rows x cols.
/// `shape_rows`: the rows of the whole call this step belongs to, which choose the launch shape as
/// add_rms_norm's rows choose its (the same bits as the unfused pair).
cudaError_t all_reduce_add_rms_norm(const RowWorkspaces& ws, const PeerSync& sync, int blocks, const Tensor& partial,
                                    const Tensor& residual, const RmsNormSpec& norm, const Tensor* out,
                                    const Fp8Rows* fp8_out, int64_t shape_rows, cudaStream_t stream);

}  // namespace seam::kernels::cuda
