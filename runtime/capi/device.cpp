// Collectives on CUDA device memory. With CUDA in the build they go to device::DeviceCommunicator;
// without it every call fails with SEAM_ERR_NOT_SUPPORTED, so one header serves both builds.
#include <string>

#include "runtime/capi/handles.h"
#include "runtime/capi/status.h"

#ifdef SEAM_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "seam/device_communicator.h"
#endif

namespace {

using seam::capi::guarded;

#ifdef SEAM_HAVE_CUDA

constexpr bool kHasCuda = true;

/// comm's device side, or a UsageError when seam_comm_device_init has not made it.
seam::device::DeviceCommunicator& device_of(seam_comm_t comm, const char* function) {
  seam_comm& c = seam::capi::need(comm, function);
  if (!c.device)
    throw seam::UsageError(std::string(function) + ": call seam_comm_device_init on this communicator first");
  return *c.device;
}

/// Runs start(device, stream); the Work goes to *out, or, with out NULL, is left to the stream
/// (waiting here would synchronise with the host, which device calls never do).
template <class Start>
seam_status_t device_call(const char* function, seam_comm_t comm, void* stream, seam_work_t* out, Start&& start) {
  if (out) *out = nullptr;
  return guarded(function, [&] {
    seam::comm::Work work = start(device_of(comm, function), static_cast<cudaStream_t>(stream));
    if (out) *out = new seam_work{std::move(work)};
  });
}

#else

constexpr bool kHasCuda = false;

template <class Start>
seam_status_t device_call(const char* function, seam_comm_t, void*, seam_work_t* out, Start&&) {
  if (out) *out = nullptr;
  return guarded(function, [&] {
    throw seam::NotSupportedError(std::string(function) +
                                  ": this Seam was built without CUDA (no nvcc found, or SEAM_ENABLE_CUDA=OFF), "
                                  "so it has no device-memory collectives");
  });
}

#endif

}  // namespace

using seam::capi::rank_counts;
using seam::capi::to_dtype;
using seam::capi::to_op;

extern "C" {

int seam_has_cuda(void) { return kHasCuda ? 1 : 0; }

seam_status_t seam_comm_device_init(seam_comm_t comm, int device) {
  constexpr const char* fn = "seam_comm_device_init";
#ifdef SEAM_HAVE_CUDA
  return guarded(fn, [&] {
    seam_comm& c = seam::capi::need(comm, fn);
    if (c.device) throw seam::UsageError(std::string(fn) + ": this communicator's device side already exists");
    c.device = seam::device::DeviceCommunicator::create(c.host, device);
  });
#else
  return device_call(fn, comm, nullptr, nullptr, [] {});
#endif
}

seam_status_t seam_all_reduce_device(seam_comm_t comm, const void* send, void* recv, size_t count, seam_dtype_t dtype,
                                     seam_reduce_op_t op, void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_all_reduce_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.all_reduce(send, recv, count, to_dtype(dtype, fn), to_op(op, fn), s);
  });
}

seam_status_t seam_reduce_scatter_device(seam_comm_t comm, const void* send, void* recv, size_t recv_count,
                                         seam_dtype_t dtype, seam_reduce_op_t op, void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_reduce_scatter_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.reduce_scatter(send, recv, recv_count, to_dtype(dtype, fn), to_op(op, fn), s);
  });
}

seam_status_t seam_reduce_scatterv_device(seam_comm_t comm, const void* send, void* recv, const size_t* counts,
                                          seam_dtype_t dtype, seam_reduce_op_t op, void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_reduce_scatterv_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.reduce_scatterv(send, recv, rank_counts(*comm, counts, fn), to_dtype(dtype, fn), to_op(op, fn), s);
  });
}

seam_status_t seam_all_gather_device(seam_comm_t comm, const void* send, void* recv, size_t send_count,
                                     seam_dtype_t dtype, void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_all_gather_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.all_gather(send, recv, send_count, to_dtype(dtype, fn), s);
  });
}

seam_status_t seam_all_gatherv_device(seam_comm_t comm, const void* send, void* recv, const size_t* counts,
                                      seam_dtype_t dtype, void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_all_gatherv_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.all_gatherv(send, recv, rank_counts(*comm, counts, fn), to_dtype(dtype, fn), s);
  });
}

seam_status_t seam_broadcast_device(seam_comm_t comm, void* buffer, size_t count, seam_dtype_t dtype, int root,
                                    void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_broadcast_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.broadcast(buffer, count, to_dtype(dtype, fn), root, s);
  });
}

seam_status_t seam_send_device(seam_comm_t comm, const void* buffer, size_t count, seam_dtype_t dtype, int peer,
                               void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_send_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.send(buffer, count, to_dtype(dtype, fn), peer, s);
  });
}

seam_status_t seam_recv_device(seam_comm_t comm, void* buffer, size_t count, seam_dtype_t dtype, int peer,
                               void* stream, seam_work_t* work) {
  constexpr const char* fn = "seam_recv_device";
  return device_call(fn, comm, stream, work, [&](auto& d, auto s) {
    return d.recv(buffer, count, to_dtype(dtype, fn), peer, s);
  });
}

}  // extern "C"
