// The device collectives: checks, then the call cut into steps of one workspace each, one kernel
// per step; or the staged path where the GPUs cannot map each other's memory.
#include <algorithm>
#include <numeric>
#include <vector>

#include "kernels/cuda/all_reduce_norm.h"
#include "seam/errors.h"
#include "layouts/log.h"
#include "seam/device_communicator.h"
#include "runtime/device/device_comm_impl.h"
#include "runtime/device/select.h"
#include "runtime/device/staged.h"

namespace seam::device {
namespace {

using kernels::cuda::CollectiveStep;
using kernels::cuda::DeviceAlgo;
using kernels::cuda::Share;

void check_types(const char* op, DType dtype, const ReduceOp* reduce) {
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f16)
    throw TypeError(std::string("seam: device ") + op + ": dtype must be float32, bfloat16 or float16, got " +
                    std::string(dtype_name(dtype)));
  if (reduce && *reduce != ReduceOp::sum && *reduce != ReduceOp::max && *reduce != ReduceOp::min)
    throw ValueError(std::string("seam: device ") + op + ": op must be sum, max or min");
}

/// Data movement takes any dtype: its elements travel as 4- or 2-byte carriers, bits unchanged
/// (counts rescaled in place). 1-byte elements need even counts.
DType carrier(const char* op, DType dtype, std::span<size_t> counts) {
  if (dtype == DType::f32 || dtype == DType::bf16 || dtype == DType::f16) return dtype;
  const size_t e = dtype_size(dtype);
  if (e == 8) {
    for (size_t& c : counts) {
      if (c > SIZE_MAX / 2) throw ValueError(std::string("seam: device ") + op + ": the byte count overflows");
      c *= 2;
    }
    return DType::f32;
  }
  if (e == 4) return DType::f32;
  if (e == 2) return DType::f16;
  for (size_t& c : counts) {
    if (c % 2)
      throw TypeError(std::string("seam: device ") + op + ": 1-byte elements (" + std::string(dtype_name(dtype)) +
                      ") move in even counts");
    c /= 2;
  }
  return DType::f16;
}

size_t bytes_of(const char* op, size_t count, DType dtype) {
  const size_t e = dtype_size(dtype);
  if (count > SIZE_MAX / e) throw ValueError(std::string("seam: device ") + op + ": the byte count overflows");
  return count * e;
}

/// Offsets of each rank's block and their total, with overflow checks.
size_t offsets_of(const char* op, std::span<const size_t> counts, int size, std::vector<size_t>& offsets) {
  if (static_cast<int>(counts.size()) != size)
    throw ValueError(std::string("seam: device ") + op + ": counts has " + std::to_string(counts.size()) +
                     " entries for " + std::to_string(size) + " ranks");
  size_t total = 0;
  offsets.assign(counts.size(), 0);
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    if (counts[r] > SIZE_MAX - total) throw ValueError(std::string("seam: device ") + op + ": the counts' sum overflows");
    total += counts[r];
  }
  return total;
}

size_t vector_elems(DType dtype) { return 16 / dtype_size(dtype); }

}  // namespace

size_t DeviceCommunicatorImpl::block_steps(const void* send, void* recv, std::span<const size_t> counts,
                                           const std::vector<size_t>& offsets, DType dtype, uint64_t signature,
                                           const std::function<void(const kernels::cuda::CollectiveStep&, size_t)>& launch) {
  const size_t e = dtype_size(dtype), V = vector_elems(dtype), n = counts.size();
  const size_t chunk = std::max(V, workspace_bytes / e / n / V * V);  // per rank and step
  const size_t longest = *std::max_element(counts.begin(), counts.end());
  size_t k = 0;
  for (; k * chunk < longest; ++k) {
    CollectiveStep st;
    st.send = send;
    st.recv = recv;
    std::copy(ws, ws + size, st.ws);
    size_t step_bytes = 0;
    for (size_t s = 0; s < n; ++s) {
      const size_t done = std::min(k * chunk, counts[s]);
      st.share[s] = Share{offsets[s] + done, s * chunk, std::min(chunk, counts[s] - done)};
      step_bytes += st.share[s].len * e;
    }
    st.blocks = blocks_for(step_bytes / n, max_blocks);
    st.sync = sync(signature);
    launch(st, k * chunk);
  }
  return k;
}

comm::Work DeviceCommunicator::all_reduce(const void* send, void* recv, size_t count, DType dtype, ReduceOp op,
                                          cudaStream_t stream) {
  auto& d = *impl_;
  constexpr auto call = DeviceCall::all_reduce;
  check_types("all_reduce", dtype, &op);
  const size_t bytes = bytes_of("all_reduce", count, dtype);
  if (count == 0) return (d.begin(call, stream), comm::Work());
  d.pointers.require_device(send, bytes, "all_reduce", "the send buffer");
  d.pointers.require_device(recv, bytes, "all_reduce", "the receive buffer");
  const cudaStreamCaptureStatus capture = d.begin(call, stream);
  if (!d.peer_path) return (staged::all_reduce(d, send, recv, count, dtype, op, stream, capture), d.finish(call, stream, capture));
  const DeviceAlgo algo = select_all_reduce(bytes, d.size, d.algo_override);
  const size_t e = dtype_size(dtype), V = vector_elems(dtype), n = static_cast<size_t>(d.size);
  const size_t cap = std::max(V * n, d.workspace_bytes / e / (V * n) * (V * n));
  const uint64_t sig = call_signature(call, static_cast<int>(dtype), static_cast<int>(op), 0, &count, 1);
  size_t steps = 0;
  for (size_t base = 0; base < count; base += cap, ++steps) {
    const size_t len = std::min(cap, count - base);
    CollectiveStep st;
    st.send = send;
    st.recv = recv;
    std::copy(d.ws, d.ws + d.size, st.ws);
    if (algo == DeviceAlgo::one_shot) {
      st.share[0] = Share{base, 0, len};
    } else {
      for (size_t s = 0; s < n; ++s) {
        const size_t lo = len * s / n / V * V, hi = s + 1 == n ? len : len * (s + 1) / n / V * V;
        st.share[s] = Share{base + lo, lo, hi - lo};
      }
    }
    st.blocks = blocks_for(len * e / (algo == DeviceAlgo::one_shot ? 1 : n), d.max_blocks);
    st.sync = d.sync(sig);
    d.check_launch(kernels::cuda::launch_all_reduce(st, dtype, op, algo, stream), call);
  }
  SEAM_LOG_DEBUG("seam: device all_reduce {} x {} {}: {} over peer memory, {} step(s)", count, dtype_name(dtype),
                 reduce_op_name(op), algo_name(algo), steps);
  return d.finish(call, stream, capture);
}

comm::Work DeviceCommunicator::reduce_scatter(const void* send, void* recv, size_t recv_count, DType dtype,
                                              ReduceOp op, cudaStream_t stream) {
  std::vector<size_t> counts(static_cast<size_t>(size()), recv_count);
  return impl_->reduce_scatter_blocks(DeviceCall::reduce_scatter, send, recv, counts, dtype, op, stream);
}

comm::Work DeviceCommunicator::reduce_scatterv(const void* send, void* recv, std::span<const size_t> counts,
                                               DType dtype, ReduceOp op, cudaStream_t stream) {
  return impl_->reduce_scatter_blocks(DeviceCall::reduce_scatterv, send, recv, counts, dtype, op, stream);
}

comm::Work DeviceCommunicator::all_gather(const void* send, void* recv, size_t send_count, DType dtype,
                                          cudaStream_t stream) {
  std::vector<size_t> counts(static_cast<size_t>(size()), send_count);
  const DType moved = carrier("all_gather", dtype, counts);
  return impl_->all_gather_blocks(DeviceCall::all_gather, send, recv, counts, moved, stream);
}

comm::Work DeviceCommunicator::all_gatherv(const void* send, void* recv, std::span<const size_t> counts, DType dtype,
                                           cudaStream_t stream) {
  std::vector<size_t> moved_counts(counts.begin(), counts.end());
  const DType moved = carrier("all_gatherv", dtype, moved_counts);
  return impl_->all_gather_blocks(DeviceCall::all_gatherv, send, recv, moved_counts, moved, stream);
}

comm::Work DeviceCommunicatorImpl::reduce_scatter_blocks(DeviceCall call, const void* send, void* recv,
                                                         std::span<const size_t> counts, DType dtype, ReduceOp op,
                                                         cudaStream_t stream) {
  const char* op_name = call_name(call);
  check_types(op_name, dtype, &op);
  std::vector<size_t> offsets;
  const size_t total = offsets_of(op_name, counts, size, offsets);
  const size_t mine = counts[static_cast<size_t>(rank)];
  const size_t total_bytes = bytes_of(op_name, total, dtype);
  if (total == 0) return (begin(call, stream), comm::Work());
  pointers.require_device(send, total_bytes, op_name, "the send buffer");
  if (mine) pointers.require_device(recv, mine * dtype_size(dtype), op_name, "the receive buffer");
  const cudaStreamCaptureStatus capture = begin(call, stream);
  if (!peer_path)
    return (staged::reduce_scatter(*this, send, recv, counts, dtype, op, stream, capture), finish(call, stream, capture));
  const uint64_t sig = call_signature(call, static_cast<int>(dtype), static_cast<int>(op), 0, counts.data(),
                                      counts.size());
  const size_t steps = block_steps(send, recv, counts, offsets, dtype, sig, [&](const CollectiveStep& st, size_t done) {
    check_launch(kernels::cuda::launch_reduce_scatter(st, dtype, op, std::min(done, mine), stream), call);
  });
  SEAM_LOG_DEBUG("seam: device {} {} x {} {}: one-shot over peer memory, {} step(s)", op_name, total,
                 dtype_name(dtype), reduce_op_name(op), steps);
  return finish(call, stream, capture);
}

comm::Work DeviceCommunicatorImpl::all_gather_blocks(DeviceCall call, const void* send, void* recv,
                                                     std::span<const size_t> counts, DType dtype,
                                                     cudaStream_t stream) {
  const char* op_name = call_name(call);
  check_types(op_name, dtype, nullptr);
  std::vector<size_t> offsets;
  const size_t total = offsets_of(op_name, counts, size, offsets);
  const size_t mine = counts[static_cast<size_t>(rank)];
  const size_t total_bytes = bytes_of(op_name, total, dtype);
  if (total == 0) return (begin(call, stream), comm::Work());
  if (mine) pointers.require_device(send, mine * dtype_size(dtype), op_name, "the send buffer");
  pointers.require_device(recv, total_bytes, op_name, "the receive buffer");
  const cudaStreamCaptureStatus capture = begin(call, stream);
  if (!peer_path) return (staged::all_gather(*this, send, recv, counts, dtype, stream, capture), finish(call, stream, capture));
  const uint64_t sig = call_signature(call, static_cast<int>(dtype), 0, 0, counts.data(), counts.size());
  const size_t steps = block_steps(send, recv, counts, offsets, dtype, sig, [&](const CollectiveStep& st, size_t done) {
    check_launch(kernels::cuda::launch_all_gather(st, dtype, std::min(done, mine), stream), call);
  });
  SEAM_LOG_DEBUG("seam: device {} {} x {}: over peer memory, {} step(s)", op_name, total, dtype_name(dtype),
                 steps);
  return finish(call, stream, capture);
}

comm::Work DeviceCommunicator::broadcast(void* buffer, size_t count, DType dtype, int root, cudaStream_t stream) {
  return impl_->broadcast(buffer, count, dtype, root, stream);
}

comm::Work DeviceCommunicatorImpl::broadcast(void* buffer, size_t count, DType dtype, int root, cudaStream_t stream) {
  auto& d = *this;
  constexpr auto call = DeviceCall::broadcast;
  dtype = carrier("broadcast", dtype, std::span<size_t>(&count, 1));
  check_types("broadcast", dtype, nullptr);
  if (root < 0 || root >= d.size)
    throw ValueError("seam: device broadcast: root " + std::to_string(root) + " is not a rank of " +
                     std::to_string(d.size));
  const size_t bytes = bytes_of("broadcast", count, dtype);
  if (count == 0) return (d.begin(call, stream), comm::Work());
  d.pointers.require_device(buffer, bytes, "broadcast", "the buffer");
  const cudaStreamCaptureStatus capture = d.begin(call, stream);
  if (!d.peer_path) return (staged::broadcast(d, buffer, count, dtype, root, stream, capture), d.finish(call, stream, capture));
  const size_t e = dtype_size(dtype), V = vector_elems(dtype);
  const size_t cap = std::max(V, d.workspace_bytes / e / V * V);
  const uint64_t sig = call_signature(call, static_cast<int>(dtype), 0, root, &count, 1);
  for (size_t base = 0; base < count; base += cap) {
    const size_t len = std::min(cap, count - base);
    CollectiveStep st;
    st.recv = buffer;
    st.root = root;
    std::copy(d.ws, d.ws + d.size, st.ws);
    st.share[0] = Share{base, 0, len};
    st.blocks = blocks_for(len * e, d.max_blocks);
    st.sync = d.sync(sig);
    d.check_launch(kernels::cuda::launch_broadcast(st, dtype, stream), call);
  }
  SEAM_LOG_DEBUG("seam: device broadcast {} x {} from rank {}: over peer memory", count, dtype_name(dtype), root);
  return d.finish(call, stream, capture);
}

comm::Work DeviceCommunicatorImpl::fused_norm(DeviceCall call, const Tensor& partial, const Tensor& residual,
                                              const kernels::RmsNormSpec& norm, const Tensor* out,
                                              const kernels::Fp8Rows* fp8_out, cudaStream_t stream) {
  const char* op_name = call_name(call);
  check_types(op_name, partial.dtype, nullptr);
  const Tensor& dst = fp8_out ? fp8_out->values : *out;
  if (partial.rows != residual.rows || partial.cols != residual.cols || partial.rows != dst.rows ||
      partial.cols != dst.cols)
    throw ValueError(std::string("seam: device ") + op_name + ": partial, residual and output differ in shape");
  if (partial.rows < 0 || partial.cols < 0) throw ValueError(std::string("seam: device ") + op_name + ": negative shape");
  if (partial.rows == 0 || partial.cols == 0) return (begin(call, stream), comm::Work());
  for (const Tensor* t : {&partial, &residual, &dst}) {
    if (!t->device.is_cuda() || t->device.index != device)
      throw ValueError(std::string("seam: device ") + op_name + ": every tensor must be on cuda:" +
                       std::to_string(device));
    if (t->row_stride < t->cols) throw ValueError(std::string("seam: device ") + op_name + ": row stride below cols");
    const size_t span = (static_cast<size_t>(t->rows - 1) * static_cast<size_t>(t->row_stride) +
                         static_cast<size_t>(t->cols)) * dtype_size(t->dtype);
    pointers.require_device(t->data, span, op_name, t == &partial ? "the partial" : t == &residual ? "the residual" : "the output");
  }
  if (norm.weight) pointers.require_device(norm.weight, static_cast<size_t>(partial.cols) * dtype_size(norm.weight_dtype), op_name, "the norm weight");
  const cudaStreamCaptureStatus capture = begin(call, stream);
  if (!peer_path)
    return (staged::fused_norm(*this, partial, residual, norm, out, fp8_out, stream, capture), finish(call, stream, capture));
  const size_t row_bytes = static_cast<size_t>(partial.cols) * dtype_size(partial.dtype);
  const int64_t rows_per_step = static_cast<int64_t>(workspace_bytes / row_bytes);
  if (rows_per_step < 1) throw ValueError(std::string("seam: device ") + op_name + ": a row exceeds the workspace");
  const size_t shape[2] = {static_cast<size_t>(partial.rows), static_cast<size_t>(partial.cols)};
  const uint64_t sig = call_signature(call, static_cast<int>(partial.dtype), 0, 0, shape, 2);
  kernels::cuda::RowWorkspaces rws;
  std::copy(ws, ws + size, rws.ws);
  auto rows_from = [](const Tensor& t, int64_t r0, int64_t rows) {
    Tensor v = t;
    v.data = static_cast<char*>(t.data) + static_cast<size_t>(r0 * t.row_stride) * dtype_size(t.dtype);
    v.rows = rows;
    return v;
  };
  for (int64_t r0 = 0; r0 < partial.rows; r0 += rows_per_step) {
    const int64_t rows = std::min(rows_per_step, partial.rows - r0);
    const Tensor p = rows_from(partial, r0, rows), res = rows_from(residual, r0, rows);
    const int blocks = static_cast<int>(std::min<int64_t>(rows, max_blocks));
    if (fp8_out) {
      kernels::Fp8Rows o{rows_from(fp8_out->values, r0, rows), fp8_out->scales + r0};
      check_launch(kernels::cuda::all_reduce_add_rms_norm(rws, sync(sig), blocks, p, res, norm, nullptr, &o, partial.rows, stream), call);
    } else {
      const Tensor o = rows_from(*out, r0, rows);
      check_launch(kernels::cuda::all_reduce_add_rms_norm(rws, sync(sig), blocks, p, res, norm, &o, nullptr, partial.rows, stream), call);
    }
  }
  SEAM_LOG_DEBUG("seam: device {} {} x {} {}: one-shot fused over peer memory", op_name, partial.rows, partial.cols,
                 dtype_name(partial.dtype));
  return finish(call, stream, capture);
}

comm::Work DeviceCommunicator::all_reduce_add_rms_norm(const Tensor& partial, const Tensor& residual,
                                                       const kernels::RmsNormSpec& norm, const Tensor& out,
                                                       cudaStream_t stream) {
  return impl_->fused_norm(DeviceCall::fused_norm, partial, residual, norm, &out, nullptr, stream);
}

comm::Work DeviceCommunicator::all_reduce_add_rms_norm_fp8(const Tensor& partial, const Tensor& residual,
                                                           const kernels::RmsNormSpec& norm,
                                                           const kernels::Fp8Rows& out, cudaStream_t stream) {
  return impl_->fused_norm(DeviceCall::fused_norm_fp8, partial, residual, norm, nullptr, &out, stream);
}

}  // namespace seam::device
