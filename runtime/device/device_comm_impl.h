// Runtime-internal state of a DeviceCommunicator: the peer-mapped workspaces, the shared abort
// page, the watchdog, and the plumbing every call shares (checks, steps, the eager Work).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kernels/cuda/collectives.h"
#include "kernels/norm/rms_norm.h"
#include "kernels/quant/norm_quant.h"
#include "seam/tensor.h"
#include "seam/communicator.h"
#include "seam/device_communicator.h"
#include "runtime/device/device_state.h"
#include "runtime/device/device_work.h"
#include "runtime/device/pointer_check.h"
#include "runtime/device/staged_pipeline.h"
#include "runtime/device/watchdog.h"
#include "transports/cuda_peer/vmm_allocation.h"

namespace seam::device {

/// The kinds of device call, for signatures and logs.
enum class DeviceCall : uint8_t { all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast, fused_norm, fused_norm_fp8, send, recv };
const char* call_name(DeviceCall c);

class DeviceCommunicatorImpl {
 public:
  DeviceCommunicatorImpl(std::shared_ptr<comm::Communicator> host, int device);
  ~DeviceCommunicatorImpl();

  /// Checks before a call: not aborted, the host engine usable, one stream at a time. Returns
  /// whether the stream is capturing, for finish().
  cudaStreamCaptureStatus begin(DeviceCall call, cudaStream_t stream);
  /// After the call's launches: the eager call's Work, or a finished one under capture.
  comm::Work finish(DeviceCall call, cudaStream_t stream, cudaStreamCaptureStatus capture);
  /// Launches the steps of a call whose rank r owns counts[r] elements at offsets[r]: each step
  /// moves up to a workspace's share of every block; launch(step, elements of each block before
  /// it). Returns the number of steps.
  size_t block_steps(const void* send, void* recv, std::span<const size_t> counts, const std::vector<size_t>& offsets,
                     DType dtype, uint64_t signature,
                     const std::function<void(const kernels::cuda::CollectiveStep&, size_t)>& launch);
  /// A PeerSync for a step of a call with this signature.
  kernels::cuda::PeerSync sync(uint64_t signature) const;
  /// Throws a CommError naming the launch's failure (and aborts), when err is not cudaSuccess.
  void check_launch(cudaError_t err, DeviceCall call);
  /// Sets up local_level and cross_pipeline where the ranks' hosts allow (a collective call).
  void make_two_levels(size_t chunk_bytes);

  /// Reduce-scatter(v) and all-gather(v) with their blocks given per rank; broadcast; the fused norm.
  comm::Work reduce_scatter_blocks(DeviceCall call, const void* send, void* recv, std::span<const size_t> counts,
                                   DType dtype, ReduceOp op, cudaStream_t stream);
  comm::Work all_gather_blocks(DeviceCall call, const void* send, void* recv, std::span<const size_t> counts,
                               DType dtype, cudaStream_t stream);
  comm::Work broadcast(void* buffer, size_t count, DType dtype, int root, cudaStream_t stream);
  /// send (DeviceCall::send) or recv with `peer`.
  comm::Work point_to_point(DeviceCall call, void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream);
  comm::Work fused_norm(DeviceCall call, const Tensor& partial, const Tensor& residual,
                        const kernels::RmsNormSpec& norm, const Tensor* out, const kernels::Fp8Rows* fp8_out,
                        cudaStream_t stream);

  std::shared_ptr<comm::Communicator> host;
  std::shared_ptr<DeviceState> state;
  int device = 0;
  int rank = 0;
  int size = 1;
  bool peer_path = true;     ///< false: staged through host memory
  int max_blocks = 1;        ///< per kernel, the same on every rank
  size_t workspace_bytes = 0;  ///< data area of each rank's workspace
  void* ws[kernels::cuda::kMaxRanks] = {};  ///< every rank's data area, mapped here
  kernels::cuda::PeerFlags* flags[kernels::cuda::kMaxRanks] = {};
  uint32_t* epochs = nullptr;  ///< this rank's barrier counts (cudaMalloc)
  /// Chunks this rank sent to each rank, then chunks it received from each (after epochs).
  uint32_t* p2p_counts = nullptr;
  PointerCheck pointers{0};
  /// The staged path's chunks, progress thread and pinned slots (null on the peer path).
  std::unique_ptr<StagedPipeline> pipeline;
  /// Ranks on several hosts, as many on each (two or more), whose GPUs on each host reach each
  /// other: the device communicator of this host's ranks, and the pipeline over the ranks of this
  /// place on every host; the all-reduce runs in two levels over them. Null otherwise.
  std::unique_ptr<DeviceCommunicatorImpl> local_level;
  std::unique_ptr<StagedPipeline> cross_pipeline;
  /// With local_level: the group ranks host by host (host h's are entries [h L, (h + 1) L) for L
  /// ranks per host), and this rank's host's place among the hosts.
  std::vector<int> ranks_by_host;
  int host_index = 0;
  /// This rank's index in `state`'s page (its local rank when the state is local_level's).
  int state_rank = 0;
  std::string algo_override;

 private:
  transport::cuda_peer::VmmAllocation own_;
  std::vector<transport::cuda_peer::VmmAllocation> peers_;
  std::unique_ptr<Watchdog> watchdog_;
  cudaStream_t last_stream_ = nullptr;
  std::shared_ptr<DeviceWork> last_work_;
};

/// A 64-bit fingerprint of a call (kind, dtype, op, root, counts) that peers compare on the GPU.
uint64_t call_signature(DeviceCall call, int dtype, int op, int root, const size_t* counts, size_t n);

/// How the runtime reaches a DeviceCommunicator's implementation (private in the public header).
struct DeviceCommunicatorAccess {
  static DeviceCommunicatorImpl& of(DeviceCommunicator& c) { return *c.impl_; }
};

}  // namespace seam::device
