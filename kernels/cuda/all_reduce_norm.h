// The fused one-shot all-reduce + residual add + RMSNorm over peer-mapped buffers (what CUDA IPC
// gives a node's ranks): every rank reads every peer's partial directly, sums them in rank order in
// FP32, rounds the sum to the activation dtype, adds its residual and normalises — the same result
// as an unfused all-reduce followed by add_rms_norm. Ranks meet at a start barrier (every partial
// written) and an end barrier (no partial overwritten while a peer still reads it) on signal
// buffers each rank maps from every peer.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/norm/rms_norm.h"
#include "layouts/tensor.h"

namespace seam::kernels::cuda {

inline constexpr int kMaxPeers = 8;
inline constexpr int kMaxBarrierBlocks = 132;

/// One rank's barrier slots, allocated in device memory, zeroed once, and mapped into every peer.
struct PeerSignal {
  uint32_t start[kMaxBarrierBlocks][kMaxPeers];
  uint32_t end[kMaxBarrierBlocks][kMaxPeers];
};

/// Where every rank's partial and signal lie in this rank's address space.
struct PeerBuffers {
  const void* partials[kMaxPeers] = {};  ///< rank i's partial (rows x cols, row_stride as `layout`)
  PeerSignal* signals[kMaxPeers] = {};   ///< rank i's signal slots
  int world = 0;
  int rank = 0;
};

/// residual := round(Σ partials) + residual (rounded, in place); out := RMSNorm of the FP32 sum.
/// `layout` gives dtype, rows, cols and row_stride of every partial (its data pointer is unused).
/// `epoch` must differ from the previous call's (a per-communicator counter). Collective: every
/// rank of `peers` launches it with the same epoch and shape.
cudaError_t one_shot_all_reduce_add_rms_norm(const PeerBuffers& peers, const Tensor& layout, const Tensor& residual,
                                             const RmsNormSpec& norm, const Tensor& out, uint32_t epoch,
                                             cudaStream_t stream);

}  // namespace seam::kernels::cuda
