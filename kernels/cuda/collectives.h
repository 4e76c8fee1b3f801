// Device collective kernels over peer-mapped workspaces: each rank copies its input into its own
// workspace, the ranks meet (block b with block b), each reads what it needs from the peers'
// workspaces, and they meet again before any workspace is reused. Sums, maxima and minima
// accumulate in FP32 with the ranks in order, so every rank gets identical bits. 16-byte vector
// loads where every pointer and offset allows, element loads otherwise.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/peer_sync.h"
#include "seam/dtype.h"

namespace seam::kernels::cuda {

/// One rank's part of a call, in elements: where it lies in the user's buffer (send for reductions,
/// recv for gathers), where in the workspaces, and how long it is.
struct Share {
  size_t user = 0;
  size_t ws = 0;
  size_t len = 0;
};

enum class DeviceAlgo : uint8_t {
  one_shot,  ///< every rank reads every peer's whole input
  two_shot,  ///< all-reduce as reduce-scatter then all-gather through the workspaces
};

/// One kernel launch of a collective (a step of a call that may span several workspaces' worth).
struct CollectiveStep {
  const void* send = nullptr;
  void* recv = nullptr;
  void* ws[kMaxRanks] = {};       ///< every rank's workspace data area, mapped here
  Share share[kMaxRanks] = {};    ///< per rank (all-reduce: the share each rank reduces)
  int root = 0;                   ///< broadcast
  int blocks = 1;
  PeerSync sync{};
};

/// all-reduce: share[r] = the elements rank r reduces (two-shot), or share[0] the whole (one-shot),
/// user offsets into send and recv alike.
cudaError_t launch_all_reduce(const CollectiveStep& step, DType dtype, ReduceOp op, DeviceAlgo algo,
                              cudaStream_t stream);
/// reduce-scatter(v): share[r] = rank r's block (user: offset in send); recv gets share[rank].
cudaError_t launch_reduce_scatter(const CollectiveStep& step, DType dtype, ReduceOp op, size_t recv_offset,
                                  cudaStream_t stream);
/// all-gather(v): share[r] = rank r's block (user: offset in recv); send holds share[rank].len from
/// send_offset.
cudaError_t launch_all_gather(const CollectiveStep& step, DType dtype, size_t send_offset, cudaStream_t stream);
/// broadcast: share[0] = the elements (user offset into recv, the buffer), root's data moves.
cudaError_t launch_broadcast(const CollectiveStep& step, DType dtype, cudaStream_t stream);

}  // namespace seam::kernels::cuda
