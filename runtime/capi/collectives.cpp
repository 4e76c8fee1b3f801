// Collectives on host memory: argument translation onto comm::Communicator, nothing more.
#include "runtime/capi/handles.h"

using seam::capi::need;
using seam::capi::rank_counts;
using seam::capi::start_collective;
using seam::capi::to_dtype;
using seam::capi::to_op;

extern "C" {

seam_status_t seam_all_reduce(seam_comm_t comm, const void* send, void* recv, size_t count, seam_dtype_t dtype,
                              seam_reduce_op_t op, seam_work_t* work) {
  constexpr const char* fn = "seam_all_reduce";
  return start_collective(fn, work, [&] {
    return need(comm, fn).host->all_reduce(send, recv, count, to_dtype(dtype, fn), to_op(op, fn));
  });
}

seam_status_t seam_reduce_scatter(seam_comm_t comm, const void* send, void* recv, size_t recv_count,
                                  seam_dtype_t dtype, seam_reduce_op_t op, seam_work_t* work) {
  constexpr const char* fn = "seam_reduce_scatter";
  return start_collective(fn, work, [&] {
    return need(comm, fn).host->reduce_scatter(send, recv, recv_count, to_dtype(dtype, fn), to_op(op, fn));
  });
}

seam_status_t seam_reduce_scatterv(seam_comm_t comm, const void* send, void* recv, const size_t* counts,
                                   seam_dtype_t dtype, seam_reduce_op_t op, seam_work_t* work) {
  constexpr const char* fn = "seam_reduce_scatterv";
  return start_collective(fn, work, [&] {
    seam_comm& c = need(comm, fn);
    return c.host->reduce_scatterv(send, recv, rank_counts(c, counts, fn), to_dtype(dtype, fn), to_op(op, fn));
  });
}

seam_status_t seam_all_gather(seam_comm_t comm, const void* send, void* recv, size_t send_count, seam_dtype_t dtype,
                              seam_work_t* work) {
  constexpr const char* fn = "seam_all_gather";
  return start_collective(fn, work, [&] {
    return need(comm, fn).host->all_gather(send, recv, send_count, to_dtype(dtype, fn));
  });
}

seam_status_t seam_all_gatherv(seam_comm_t comm, const void* send, void* recv, const size_t* counts,
                               seam_dtype_t dtype, seam_work_t* work) {
  constexpr const char* fn = "seam_all_gatherv";
  return start_collective(fn, work, [&] {
    seam_comm& c = need(comm, fn);
    return c.host->all_gatherv(send, recv, rank_counts(c, counts, fn), to_dtype(dtype, fn));
  });
}

seam_status_t seam_broadcast(seam_comm_t comm, void* buffer, size_t count, seam_dtype_t dtype, int root,
                             seam_work_t* work) {
  constexpr const char* fn = "seam_broadcast";
  return start_collective(fn, work, [&] {
    return need(comm, fn).host->broadcast(buffer, count, to_dtype(dtype, fn), root);
  });
}

seam_status_t seam_barrier(seam_comm_t comm, seam_work_t* work) {
  constexpr const char* fn = "seam_barrier";
  return start_collective(fn, work, [&] { return need(comm, fn).host->barrier(); });
}

}  // extern "C"
