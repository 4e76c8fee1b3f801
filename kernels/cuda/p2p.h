// Point-to-point between two ranks of one host over peer memory: the sender copies a chunk into
// its own workspace and raises the receiver's ready count, the receiver copies it out of the
// sender's workspace and raises the sender's taken count. These one-thread kernels are the two
// halves' waits and signals; the counts they compare live in device memory, so a captured CUDA
// graph replays them correctly.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/peer_sync.h"

namespace seam::kernels::cuda {

/// Waits until *flag (in this rank's flag area, raised by `peer`) reaches *count + ahead; then,
/// when `signature` is given, checks that the peer's call (*signature) is this one (sync.signature).
/// Gives up on the abort word or the deadline, as the collectives' waits do.
struct P2pWait {
  PeerSync sync;
  const uint32_t* flag;
  const uint32_t* count;   ///< this rank's device count of chunks moved with `peer`
  uint32_t ahead;
  const uint64_t* signature;  ///< null: no check
  int peer;
};
cudaError_t launch_p2p_wait(const P2pWait& wait, cudaStream_t stream);

/// Raises this rank's device count and stores it in the peer's flag (after `signature`, when
/// given, at `remote_signature`): everything the stream did before is visible to the peer then.
struct P2pSignal {
  uint32_t* count;
  uint32_t* remote_flag;
  uint64_t* remote_signature;  ///< null: none
  uint64_t signature;
};
cudaError_t launch_p2p_signal(const P2pSignal& signal, cudaStream_t stream);

}  // namespace seam::kernels::cuda
