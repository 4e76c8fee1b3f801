// Device send and recv (pipeline handoff). Over peer memory a send copies each chunk (up to the
// workspace) into this rank's workspace, signals the receiver, and waits until the receiver has
// copied it out, so a send holds its stream until its recv: the workspace is free again for the
// collectives that follow. The staged path sends the chunks through the host communicator.
#include <algorithm>
#include <string>

#include "kernels/cuda/p2p.h"
#include "layouts/log.h"
#include "runtime/device/device_comm_impl.h"
#include "runtime/device/staged.h"
#include "seam/device_communicator.h"
#include "seam/errors.h"

namespace seam::device {
namespace {

using kernels::cuda::P2pSignal;
using kernels::cuda::P2pWait;

void peer_send(DeviceCommunicatorImpl& d, const char* buffer, size_t bytes, int peer, uint64_t sig,
               cudaStream_t stream) {
  kernels::cuda::PeerFlags* self = d.flags[d.rank];
  uint32_t* sent = d.p2p_counts + peer;
  for (size_t at = 0; at < bytes; at += d.workspace_bytes) {
    const size_t n = std::min(d.workspace_bytes, bytes - at);
    d.check_launch(cudaMemcpyAsync(d.ws[d.rank], buffer + at, n, cudaMemcpyDeviceToDevice, stream), DeviceCall::send);
    const P2pSignal ready{sent, &d.flags[peer]->p2p_ready[d.rank], &d.flags[peer]->p2p_signature[d.rank], sig};
    d.check_launch(kernels::cuda::launch_p2p_signal(ready, stream), DeviceCall::send);
    const P2pWait taken{d.sync(sig), &self->p2p_taken[peer], sent, 0, nullptr, peer};
    d.check_launch(kernels::cuda::launch_p2p_wait(taken, stream), DeviceCall::send);
  }
}

void peer_recv(DeviceCommunicatorImpl& d, char* buffer, size_t bytes, int peer, uint64_t sig, cudaStream_t stream) {
  kernels::cuda::PeerFlags* self = d.flags[d.rank];
  uint32_t* received = d.p2p_counts + kernels::cuda::kMaxRanks + peer;
  for (size_t at = 0; at < bytes; at += d.workspace_bytes) {
    const size_t n = std::min(d.workspace_bytes, bytes - at);
    const P2pWait ready{d.sync(sig), &self->p2p_ready[peer], received, 1, &self->p2p_signature[peer], peer};
    d.check_launch(kernels::cuda::launch_p2p_wait(ready, stream), DeviceCall::recv);
    d.check_launch(cudaMemcpyAsync(buffer + at, d.ws[peer], n, cudaMemcpyDeviceToDevice, stream), DeviceCall::recv);
    const P2pSignal taken{received, &d.flags[peer]->p2p_taken[d.rank], nullptr, 0};
    d.check_launch(kernels::cuda::launch_p2p_signal(taken, stream), DeviceCall::recv);
  }
}

}  // namespace

comm::Work DeviceCommunicatorImpl::point_to_point(DeviceCall call, void* buffer, size_t count, DType dtype, int peer,
                                                  cudaStream_t stream) {
  const char* op_name = call_name(call);
  if (peer < 0 || peer >= size || peer == rank)
    throw ValueError(std::string("seam: device ") + op_name + ": peer " + std::to_string(peer) +
                     (peer == rank ? " is this rank" : " is not a rank of " + std::to_string(size)));
  const size_t e = dtype_size(dtype);
  if (count > SIZE_MAX / e) throw ValueError(std::string("seam: device ") + op_name + ": the byte count overflows");
  if (count == 0) return (begin(call, stream), comm::Work());
  pointers.require_device(buffer, count * e, op_name, "the buffer");
  const cudaStreamCaptureStatus capture = begin(call, stream);
  if (!peer_path) {
    if (call == DeviceCall::send) staged::send(*this, buffer, count, dtype, peer, stream, capture);
    else staged::recv(*this, buffer, count, dtype, peer, stream, capture);
    return finish(call, stream, capture);
  }
  // Both sides fingerprint the send, so a recv of another count or dtype fails on both ranks.
  const uint64_t sig = call_signature(DeviceCall::send, static_cast<int>(dtype), 0, 0, &count, 1);
  if (call == DeviceCall::send) peer_send(*this, static_cast<const char*>(buffer), count * e, peer, sig, stream);
  else peer_recv(*this, static_cast<char*>(buffer), count * e, peer, sig, stream);
  SEAM_LOG_DEBUG("seam: device {} {} x {} {} rank {}: over peer memory, {} chunk(s)", op_name, count,
                 dtype_name(dtype), call == DeviceCall::send ? "to" : "from", peer,
                 (count * e + workspace_bytes - 1) / workspace_bytes);
  return finish(call, stream, capture);
}

comm::Work DeviceCommunicator::send(const void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream) {
  return impl_->point_to_point(DeviceCall::send, const_cast<void*>(buffer), count, dtype, peer, stream);
}

comm::Work DeviceCommunicator::recv(void* buffer, size_t count, DType dtype, int peer, cudaStream_t stream) {
  return impl_->point_to_point(DeviceCall::recv, buffer, count, dtype, peer, stream);
}

}  // namespace seam::device
