// Device calls of a communicator on several hosts with as many ranks on each, whose GPUs on each
// host reach each other (DeviceCommunicatorImpl::local_level): peer memory among a host's ranks,
// each rank's share through the staged pipeline among the ranks of its place on the other hosts,
// so that a rank copies and sends its share, not the whole buffer.
#pragma once

#include <cuda_runtime_api.h>

#include <span>

#include "runtime/device/device_comm_impl.h"

namespace seam::device::staged {

void two_level_all_reduce(DeviceCommunicatorImpl& d, const void* send, void* recv, size_t count, DType dtype,
                          ReduceOp op, cudaStream_t stream);
void two_level_reduce_scatter(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                              DType dtype, ReduceOp op, cudaStream_t stream);
void two_level_all_gather(DeviceCommunicatorImpl& d, const void* send, void* recv, std::span<const size_t> counts,
                          DType dtype, cudaStream_t stream);
void two_level_broadcast(DeviceCommunicatorImpl& d, void* buffer, size_t count, DType dtype, int root,
                         cudaStream_t stream);

}  // namespace seam::device::staged
