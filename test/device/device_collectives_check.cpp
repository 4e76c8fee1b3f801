// Integration check under mpirun (or the TCP store) on the GPUs of one host or more: every device collective x
// dtype x op x in/out of place x counts (0, 1, 7, unaligned, 1000, 1 KiB ... with --large 64 MiB;
// uneven reduce-scatterv / all-gatherv blocks with zeros), each equal bit for bit to the rank-order
// FP32 reference (the staged path: to the host communicator's result on the same data, which it
// runs) and checked against the host communicator's result; the fused
// all-reduce + add + RMSNorm (and its FP8 read) against all-reduce followed by the norm kernel;
// CUDA-graph capture of several calls replayed 100 times with inputs changed in place; calls
// queued back to back with one wait; refused arguments; two streams at once; and with --cycles N, N create/destroy cycles that must leak
// neither device memory nor file descriptors. Exits 77 (skipped) where there is no GPU.
//   device_collectives_check [--large] [--cycles N] [--expect-path peer|staged]
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/norm.h"
#include "seam/errors.h"
#include "seam/communicator.h"
#include "seam/device_communicator.h"
#include "test/device/device_testing.h"
#include "test/collectives/collective_names.h"

namespace seam::test::device {
namespace {

using seam::device::DeviceCommunicator;

enum class Kind { all_reduce, reduce_scatter, reduce_scatterv, all_gather, all_gatherv, broadcast };
bool reduces(Kind k) { return k == Kind::all_reduce || k == Kind::reduce_scatter || k == Kind::reduce_scatterv; }

struct Case {
  Kind kind;
  DType dtype;
  ReduceOp op;
  bool in_place;
  size_t count;       // per rank (all-reduce, broadcast: the whole)
  size_t misalign;    // elements the buffers start past a 256-byte boundary
  uint32_t seed;
};

std::string describe(const Case& c) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), "%s %s %s count %zu%s%s", kind_name(c.kind), std::string(dtype_name(c.dtype)).c_str(),
                reduces(c.kind) ? std::string(reduce_op_name(c.op)).c_str() : "", c.count,
                c.in_place ? " in place" : "", c.misalign ? " misaligned" : "");
  return buf;
}

/// Block sizes of the v-variants: uneven, with zeros.
std::vector<size_t> v_counts(size_t count, int n) {
  std::vector<size_t> c(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) c[static_cast<size_t>(r)] = r % 3 == 1 ? 0 : count + static_cast<size_t>(r) * 3;
  return c;
}

struct DeviceBuffer {
  explicit DeviceBuffer(size_t bytes) { SEAM_CUDA_OK(cudaMalloc(&base, bytes + 512)); }
  ~DeviceBuffer() { cudaFree(base); }
  void* base = nullptr;
};

/// Runs one case on the device and on the host communicator; returns the number of wrong elements.
long run_case(DeviceCommunicator& dev, comm::Communicator& host, const Case& c, cudaStream_t stream, bool* host_differs) {
  const int n = dev.size(), me = dev.rank();
  const size_t e = dtype_size(c.dtype);
  std::vector<size_t> counts(static_cast<size_t>(n), c.count);
  if (c.kind == Kind::reduce_scatterv || c.kind == Kind::all_gatherv) counts = v_counts(c.count, n);
  std::vector<size_t> offsets(static_cast<size_t>(n));
  size_t total = 0;
  for (int r = 0; r < n; ++r) offsets[static_cast<size_t>(r)] = total, total += counts[static_cast<size_t>(r)];
  const int root = static_cast<int>(c.seed % static_cast<uint32_t>(n));

  // Element counts of send and recv, and where the send lies in recv when in place.
  size_t send_n = 0, recv_n = 0, send_in_recv = 0;
  bool send_is_recv_block = false;  // gathers: send inside recv; reduce-scatters: recv inside send
  switch (c.kind) {
    case Kind::all_reduce: send_n = recv_n = c.count; break;
    case Kind::broadcast: send_n = recv_n = c.count; break;
    case Kind::reduce_scatter:
    case Kind::reduce_scatterv:
      send_n = total, recv_n = counts[static_cast<size_t>(me)], send_in_recv = offsets[static_cast<size_t>(me)];
      send_is_recv_block = true;
      break;
    case Kind::all_gather:
    case Kind::all_gatherv:
      send_n = counts[static_cast<size_t>(me)], recv_n = total, send_in_recv = offsets[static_cast<size_t>(me)];
      send_is_recv_block = true;
      break;
  }
  // Host input of this rank.
  auto send_h = host_bytes(c.dtype, send_n);
  for (size_t i = 0; i < send_n; ++i) {
    size_t gi = i;
    if (c.kind == Kind::all_gather || c.kind == Kind::all_gatherv) gi = offsets[static_cast<size_t>(me)] + i;
    store(c.dtype, send_h.data(), i, c.kind == Kind::broadcast && me != root ? -7.0f : gen(me, gi, c.seed));
  }
  // Device buffers: one when in place.
  const size_t big = std::max(send_n, recv_n) * e;
  DeviceBuffer a(big), b(big);
  char* abase = static_cast<char*>(a.base) + c.misalign * e;
  char* bbase = static_cast<char*>(b.base) + c.misalign * e;
  void *send_d = abase, *recv_d = c.kind == Kind::broadcast ? abase : bbase;  // broadcast has one buffer
  if (c.in_place) {
    if (c.kind == Kind::all_reduce || c.kind == Kind::broadcast) recv_d = send_d;
    else if (c.kind == Kind::reduce_scatter || c.kind == Kind::reduce_scatterv) recv_d = abase + send_in_recv * e;
    else send_d = bbase + send_in_recv * e, recv_d = bbase;
  }
  // On the call's stream: a pageable cudaMemcpy may return before its DMA lands, and a
  // non-blocking stream does not wait for the legacy stream.
  if (send_n) SEAM_CUDA_OK(cudaMemcpyAsync(send_d, send_h.data(), send_n * e, cudaMemcpyHostToDevice, stream));
  comm::Work w;
  switch (c.kind) {
    case Kind::all_reduce: w = dev.all_reduce(send_d, recv_d, c.count, c.dtype, c.op, stream); break;
    case Kind::reduce_scatter: w = dev.reduce_scatter(send_d, recv_d, c.count, c.dtype, c.op, stream); break;
    case Kind::reduce_scatterv: w = dev.reduce_scatterv(send_d, recv_d, counts, c.dtype, c.op, stream); break;
    case Kind::all_gather: w = dev.all_gather(send_d, recv_d, c.count, c.dtype, stream); break;
    case Kind::all_gatherv: w = dev.all_gatherv(send_d, recv_d, counts, c.dtype, stream); break;
    case Kind::broadcast: w = dev.broadcast(send_d, c.count, c.dtype, root, stream); break;
  }
  w.wait();
  SEAM_CUDA_OK(cudaStreamSynchronize(stream));
  auto got = host_bytes(c.dtype, recv_n);
  if (recv_n) SEAM_CUDA_OK(cudaMemcpy(got.data(), recv_d, recv_n * e, cudaMemcpyDeviceToHost));

  // The host communicator on the same data.
  auto host_out = host_bytes(c.dtype, recv_n);
  switch (c.kind) {
    case Kind::all_reduce: host.all_reduce(send_h.data(), host_out.data(), c.count, c.dtype, c.op).wait(); break;
    case Kind::reduce_scatter: host.reduce_scatter(send_h.data(), host_out.data(), c.count, c.dtype, c.op).wait(); break;
    case Kind::reduce_scatterv: host.reduce_scatterv(send_h.data(), host_out.data(), counts, c.dtype, c.op).wait(); break;
    case Kind::all_gather: host.all_gather(send_h.data(), host_out.data(), c.count, c.dtype).wait(); break;
    case Kind::all_gatherv: host.all_gatherv(send_h.data(), host_out.data(), counts, c.dtype).wait(); break;
    case Kind::broadcast:
      std::memcpy(host_out.data(), send_h.data(), recv_n * e);
      host.broadcast(host_out.data(), c.count, c.dtype, root).wait();
      break;
  }
  const bool staged = dev.path() == "staged";
  long wrong = 0;
  for (size_t i = 0; i < recv_n; ++i) {
    float want;
    switch (c.kind) {
      case Kind::all_reduce: want = reduce_ref(c.dtype, c.op, n, i, c.seed); break;
      case Kind::reduce_scatter:
      case Kind::reduce_scatterv: want = reduce_ref(c.dtype, c.op, n, offsets[static_cast<size_t>(me)] + i, c.seed); break;
      case Kind::broadcast: want = element(c.dtype, root, i, c.seed); break;
      default: {
        int owner = 0;
        while (owner + 1 < n && offsets[static_cast<size_t>(owner) + 1] <= i) ++owner;
        want = element(c.dtype, owner, i, c.seed);
      }
    }
    // The reference rounds once to the dtype; the device must give exactly that. A staged
    // communicator runs the host communicator's own collective, whose two-level sums across hosts
    // take another order: it must give the host's bits.
    uint32_t want_bits[1] = {0}, got_bits[1] = {0}, host_bits[1] = {0};
    store(c.dtype, want_bits, 0, want);
    std::memcpy(got_bits, got.data() + i * e, e);
    std::memcpy(host_bits, host_out.data() + i * e, e);
    if (staged) {
      want_bits[0] = host_bits[0];
      want = load(c.dtype, host_out.data(), i);
    }
    if (got_bits[0] != want_bits[0] && wrong++ == 0)
      std::fprintf(stderr, "  rank %d %s: element %zu is %g, want %g\n", me, describe(c).c_str(), i,
                   load(c.dtype, got.data(), i), want);
    if (host_bits[0] != got_bits[0]) {
      const float h = load(c.dtype, host_out.data(), i), g = load(c.dtype, got.data(), i);
      // The host may sum in another order (f32): then only a rounding apart.
      const float tol = c.dtype == DType::f32 ? 1e-5f * static_cast<float>(n) : 1e-2f;
      if (std::fabs(h - g) > tol * std::max(1.0f, std::fabs(g))) *host_differs = true;
    }
  }
  (void)send_is_recv_block;
  return wrong;
}

int run_matrix(DeviceCommunicator& dev, comm::Communicator& host, bool large, cudaStream_t stream) {
  int failures = 0;
  uint32_t seed = 1;
  std::vector<size_t> counts = {0, 1, 7, 1000, 1001, 256, 4099, 65536 + 5, 262144};
  if (large) counts.push_back(size_t{16} << 20);  // 64 MiB of f32
  for (Kind kind : {Kind::all_reduce, Kind::reduce_scatter, Kind::reduce_scatterv, Kind::all_gather, Kind::all_gatherv,
                    Kind::broadcast})
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
        if (!reduces(kind) && op != ReduceOp::sum) continue;
        for (bool in_place : {false, true})
          for (size_t count : counts) {
            // 64 MiB per rank only where it tests something new: sums, both paths of placement.
            size_t c_count = count;
            if (count >= (size_t{16} << 20)) {
              if (op != ReduceOp::sum) continue;
              c_count = count * 4 / dtype_size(dtype) / (kind == Kind::all_reduce || kind == Kind::broadcast ? 1 : static_cast<size_t>(dev.size()));
            }
            const size_t misalign = count == 1001 ? 1 : 0;
            const Case c{kind, dtype, op, in_place, c_count, misalign, seed++};
            bool host_differs = false;
            const long wrong = run_case(dev, host, c, stream, &host_differs);
            if (wrong) {
              ++failures;
              std::fprintf(stderr, "FAIL rank %d %s: %ld wrong elements\n", dev.rank(), describe(c).c_str(), wrong);
            }
            if (host_differs) {
              ++failures;
              std::fprintf(stderr, "FAIL rank %d %s: differs from the host communicator's result\n", dev.rank(),
                           describe(c).c_str());
            }
          }
      }
  return failures;
}

/// The fused boundary against all-reduce followed by add + RMSNorm on the device: the same bits.
int run_fused(DeviceCommunicator& dev, cudaStream_t stream) {
  int failures = 0;
  const int me = dev.rank();
  for (DType dtype : {DType::bf16, DType::f32})
    for (int64_t cols : {int64_t{7168}, int64_t{3001}})
      for (int64_t rows : {int64_t{1}, int64_t{16}, int64_t{257}})
        for (bool fp8 : {false, true}) {
          const size_t e = dtype_size(dtype), n = static_cast<size_t>(rows * cols);
          const uint32_t seed = static_cast<uint32_t>(1000 + rows + cols);
          auto partial_h = host_bytes(dtype, n), residual_h = host_bytes(dtype, n), weight_h = host_bytes(dtype, static_cast<size_t>(cols));
          for (size_t i = 0; i < n; ++i) {
            store(dtype, partial_h.data(), i, gen(me, i, seed));
            store(dtype, residual_h.data(), i, 2.0f * gen(99, i, seed));
          }
          for (int64_t c = 0; c < cols; ++c) store(dtype, weight_h.data(), static_cast<size_t>(c), 1.0f + 0.5f * gen(98, static_cast<size_t>(c), seed));
          DeviceBuffer partial(n * e), res1(n * e), res2(n * e), out1(n * e), out2(n * e), sum(n * e), weight(static_cast<size_t>(cols) * e),
              scales1(static_cast<size_t>(rows) * 4), scales2(static_cast<size_t>(rows) * 4);
          SEAM_CUDA_OK(cudaMemcpyAsync(partial.base, partial_h.data(), n * e, cudaMemcpyHostToDevice, stream));
          SEAM_CUDA_OK(cudaMemcpyAsync(res1.base, residual_h.data(), n * e, cudaMemcpyHostToDevice, stream));
          SEAM_CUDA_OK(cudaMemcpyAsync(res2.base, residual_h.data(), n * e, cudaMemcpyHostToDevice, stream));
          SEAM_CUDA_OK(cudaMemcpyAsync(weight.base, weight_h.data(), static_cast<size_t>(cols) * e, cudaMemcpyHostToDevice, stream));
          SEAM_CUDA_OK(cudaStreamSynchronize(stream));
          const Device gpu = Device::cuda(dev.device());
          const Tensor tp{partial.base, dtype, gpu, rows, cols, cols}, tr1{res1.base, dtype, gpu, rows, cols, cols},
              tr2{res2.base, dtype, gpu, rows, cols, cols}, ts{sum.base, dtype, gpu, rows, cols, cols};
          const DType out_dtype = fp8 ? DType::fp8_e4m3 : dtype;
          const Tensor to1{out1.base, out_dtype, gpu, rows, cols, cols}, to2{out2.base, out_dtype, gpu, rows, cols, cols};
          const kernels::RmsNormSpec spec{weight.base, dtype, kernels::NormWeight::plain, 1e-6f};
          if (fp8) {
            dev.all_reduce_add_rms_norm_fp8(tp, tr1, spec, {to1, static_cast<float*>(scales1.base)}, stream).wait();
            dev.all_reduce(partial.base, sum.base, n, dtype, ReduceOp::sum, stream).wait();
            SEAM_CUDA_OK(kernels::cuda::add_rms_norm_fp8(ts, tr2, nullptr, spec, {to2, static_cast<float*>(scales2.base)}, stream));
          } else {
            dev.all_reduce_add_rms_norm(tp, tr1, spec, to1, stream).wait();
            dev.all_reduce(partial.base, sum.base, n, dtype, ReduceOp::sum, stream).wait();
            SEAM_CUDA_OK(kernels::cuda::add_rms_norm(ts, tr2, nullptr, spec, to2, stream));
          }
          SEAM_CUDA_OK(cudaStreamSynchronize(stream));
          const size_t out_bytes = n * dtype_size(out_dtype);
          std::vector<unsigned char> r1(n * e), r2(n * e), o1(out_bytes), o2(out_bytes), s1(static_cast<size_t>(rows) * 4), s2(s1.size());
          SEAM_CUDA_OK(cudaMemcpy(r1.data(), res1.base, n * e, cudaMemcpyDeviceToHost));
          SEAM_CUDA_OK(cudaMemcpy(r2.data(), res2.base, n * e, cudaMemcpyDeviceToHost));
          SEAM_CUDA_OK(cudaMemcpy(o1.data(), out1.base, out_bytes, cudaMemcpyDeviceToHost));
          SEAM_CUDA_OK(cudaMemcpy(o2.data(), out2.base, out_bytes, cudaMemcpyDeviceToHost));
          if (fp8) {
            SEAM_CUDA_OK(cudaMemcpy(s1.data(), scales1.base, s1.size(), cudaMemcpyDeviceToHost));
            SEAM_CUDA_OK(cudaMemcpy(s2.data(), scales2.base, s2.size(), cudaMemcpyDeviceToHost));
          }
          if (r1 != r2 || o1 != o2 || s1 != s2) {
            ++failures;
            std::fprintf(stderr, "FAIL rank %d fused %s %s rows %ld cols %ld: residual %s, output %s, scales %s\n", me,
                         fp8 ? "fp8" : "", std::string(dtype_name(dtype)).c_str(), static_cast<long>(rows),
                         static_cast<long>(cols), r1 == r2 ? "same" : "DIFFERS", o1 == o2 ? "same" : "DIFFERS",
                         s1 == s2 ? "same" : "DIFFER");
          }
        }
  return failures;
}

/// Three calls captured in one graph, replayed 100 times with new inputs written in place.
int run_graph(DeviceCommunicator& dev, cudaStream_t stream) {
  const int n = dev.size(), me = dev.rank();
  const size_t count = 4099, e = 2;  // bf16, not a multiple of the vector width
  DeviceBuffer ar_in(count * e), ar_out(count * e), ag_out(count * e * static_cast<size_t>(n)), rs_in(count * 4 * static_cast<size_t>(n)),
      rs_out(count * 4);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  SEAM_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  dev.all_reduce(ar_in.base, ar_out.base, count, DType::bf16, ReduceOp::sum, stream);
  dev.all_gather(ar_out.base, ag_out.base, count, DType::bf16, stream);
  dev.reduce_scatter(rs_in.base, rs_out.base, count, DType::f32, ReduceOp::max, stream);
  SEAM_CUDA_OK(cudaStreamEndCapture(stream, &graph));
  SEAM_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  int failures = 0;
  auto in_bf = host_bytes(DType::bf16, count), in_rs = host_bytes(DType::f32, count * static_cast<size_t>(n));
  auto got_ag = host_bytes(DType::bf16, count * static_cast<size_t>(n)), got_rs = host_bytes(DType::f32, count);
  for (uint32_t replay = 0; replay < 100; ++replay) {
    const uint32_t seed = 5000 + replay;
    for (size_t i = 0; i < count; ++i) store(DType::bf16, in_bf.data(), i, gen(me, i, seed));
    for (size_t i = 0; i < count * static_cast<size_t>(n); ++i) store(DType::f32, in_rs.data(), i, gen(me, i, seed));
    SEAM_CUDA_OK(cudaMemcpyAsync(ar_in.base, in_bf.data(), count * e, cudaMemcpyHostToDevice, stream));
    SEAM_CUDA_OK(cudaMemcpyAsync(rs_in.base, in_rs.data(), count * 4 * static_cast<size_t>(n), cudaMemcpyHostToDevice, stream));
    SEAM_CUDA_OK(cudaGraphLaunch(exec, stream));
    SEAM_CUDA_OK(cudaMemcpyAsync(got_ag.data(), ag_out.base, got_ag.size() - 16, cudaMemcpyDeviceToHost, stream));
    SEAM_CUDA_OK(cudaMemcpyAsync(got_rs.data(), rs_out.base, count * 4, cudaMemcpyDeviceToHost, stream));
    SEAM_CUDA_OK(cudaStreamSynchronize(stream));
    dev.check();
    long wrong = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        uint32_t want[1] = {0}, got[1] = {0};
        store(DType::bf16, want, 0, reduce_ref(DType::bf16, ReduceOp::sum, n, i, seed));
        std::memcpy(got, got_ag.data() + (static_cast<size_t>(r) * count + i) * e, e);
        wrong += want[0] != got[0];
      }
    for (size_t i = 0; i < count; ++i)
      wrong += static_cast<const float*>(static_cast<const void*>(got_rs.data()))[i] !=
               reduce_ref(DType::f32, ReduceOp::max, n, static_cast<size_t>(me) * count + i, seed);
    if (wrong) {
      ++failures;
      std::fprintf(stderr, "FAIL rank %d graph replay %u: %ld wrong elements\n", me, replay, wrong);
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return failures;
}

/// Data movement in dtypes without a device reduction (fp8, u8, i32, f64): all-gather and broadcast
/// move every byte unchanged; 1-byte elements in an odd count are refused.
int run_movement_dtypes(DeviceCommunicator& dev, cudaStream_t stream) {
  int failures = 0;
  const int n = dev.size(), me = dev.rank();
  for (DType dtype : {DType::fp8_e4m3, DType::u8, DType::i32, DType::f64}) {
    const size_t count = 1030, e = dtype_size(dtype), bytes = count * e;
    auto byte_of = [](int rank, size_t i) { return static_cast<unsigned char>((rank * 131 + i * 7 + (i >> 8)) & 0xff); };
    std::vector<unsigned char> mine(bytes), got(bytes * static_cast<size_t>(n));
    for (size_t i = 0; i < bytes; ++i) mine[i] = byte_of(me, i);
    DeviceBuffer in(bytes), out(bytes * static_cast<size_t>(n));
    SEAM_CUDA_OK(cudaMemcpyAsync(in.base, mine.data(), bytes, cudaMemcpyHostToDevice, stream));
    dev.all_gather(in.base, out.base, count, dtype, stream).wait();
    const int root = 1 % n;
    dev.broadcast(in.base, count, dtype, root, stream).wait();
    SEAM_CUDA_OK(cudaMemcpyAsync(got.data(), out.base, got.size(), cudaMemcpyDeviceToHost, stream));
    SEAM_CUDA_OK(cudaMemcpyAsync(mine.data(), in.base, bytes, cudaMemcpyDeviceToHost, stream));
    SEAM_CUDA_OK(cudaStreamSynchronize(stream));
    long wrong = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < bytes; ++i) wrong += got[static_cast<size_t>(r) * bytes + i] != byte_of(r, i);
    for (size_t i = 0; i < bytes; ++i) wrong += mine[i] != byte_of(root, i);
    if (wrong) {
      ++failures;
      std::fprintf(stderr, "FAIL rank %d: %s all_gather/broadcast moved %ld bytes wrong\n", me,
                   std::string(dtype_name(dtype)).c_str(), wrong);
    }
  }
  DeviceBuffer d(64);
  try {
    dev.all_gather(d.base, d.base, 3, DType::u8, stream);
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: an odd count of 1-byte elements was accepted\n", me);
  } catch (const TypeError&) {
  }
  return failures;
}

/// Refused arguments: every rank makes the same bad calls, then a good one still works.
/// Calls queued back to back, then one wait: a staged communicator pipelines them (its pinned
/// slots reused across calls). Each must equal the same all-reduce on the host communicator.
int run_queued(DeviceCommunicator& dev, comm::Communicator& host, cudaStream_t stream) {
  const int me = dev.rank();
  const std::vector<size_t> sizes = {1000, 300000, 5, size_t{1} << 20, 77777, 3, 262144 + 9, 12, 2000000};
  std::vector<std::unique_ptr<DeviceBuffer>> bufs;
  std::vector<std::vector<float>> inputs;
  for (size_t k = 0; k < sizes.size(); ++k) {
    inputs.emplace_back(sizes[k]);
    for (size_t i = 0; i < sizes[k]; ++i) inputs[k][i] = gen(me, i, 900 + static_cast<uint32_t>(k));
    bufs.push_back(std::make_unique<DeviceBuffer>(sizes[k] * 4));
    SEAM_CUDA_OK(cudaMemcpyAsync(bufs[k]->base, inputs[k].data(), sizes[k] * 4, cudaMemcpyHostToDevice, stream));
  }
  comm::Work last;
  for (size_t k = 0; k < sizes.size(); ++k)
    last = dev.all_reduce(bufs[k]->base, bufs[k]->base, sizes[k], DType::f32, ReduceOp::sum, stream);
  last.wait();
  SEAM_CUDA_OK(cudaStreamSynchronize(stream));
  int failures = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<float> want(sizes[k]), got(sizes[k]);
    host.all_reduce(inputs[k].data(), want.data(), sizes[k], DType::f32, ReduceOp::sum).wait();
    SEAM_CUDA_OK(cudaMemcpy(got.data(), bufs[k]->base, sizes[k] * 4, cudaMemcpyDeviceToHost));
    if (std::memcmp(got.data(), want.data(), sizes[k] * 4) != 0) {
      ++failures;
      std::fprintf(stderr, "FAIL rank %d: queued all-reduce %zu of %zu elements differs from the host's\n", me, k,
                   sizes[k]);
    }
  }
  return failures;
}

int run_refusals(DeviceCommunicator& dev, comm::Communicator& host, cudaStream_t stream) {
  int failures = 0;
  auto expect = [&](const char* what, auto&& call, auto tag) {
    using Error = decltype(tag);
    try {
      call();
      ++failures;
      std::fprintf(stderr, "FAIL rank %d: %s was accepted\n", dev.rank(), what);
    } catch (const Error&) {
    } catch (const std::exception& e) {
      ++failures;
      std::fprintf(stderr, "FAIL rank %d: %s threw another error: %s\n", dev.rank(), what, e.what());
    }
  };
  DeviceBuffer d(4096);
  std::vector<float> h(1024);
  expect("a host pointer", [&] { dev.all_reduce(h.data(), d.base, 1024, DType::f32, ReduceOp::sum, stream); }, ValueError(""));
  expect("a host output", [&] { dev.all_gather(d.base, h.data(), 1, DType::f32, stream); }, ValueError(""));
  expect("a null buffer", [&] { dev.broadcast(nullptr, 4, DType::f32, 0, stream); }, ValueError(""));
  // (The driver may report a small allocation's range rounded up: run far past it.)
  expect("past the allocation's end", [&] { dev.all_reduce(d.base, d.base, size_t{16} << 20, DType::f32, ReduceOp::sum, stream); }, ValueError(""));
  expect("an integer dtype", [&] { dev.all_reduce(d.base, d.base, 4, DType::i32, ReduceOp::sum, stream); }, TypeError(""));
  expect("an overflowing count", [&] { dev.all_reduce(d.base, d.base, SIZE_MAX / 2, DType::f32, ReduceOp::sum, stream); }, ValueError(""));
  expect("a root out of range", [&] { dev.broadcast(d.base, 4, DType::f32, dev.size(), stream); }, ValueError(""));
  std::vector<size_t> short_counts(static_cast<size_t>(dev.size()) + 1, 1);
  expect("counts of another length", [&] { dev.reduce_scatterv(d.base, d.base, short_counts, DType::f32, ReduceOp::sum, stream); }, ValueError(""));
  int gpus = 0;
  cudaGetDeviceCount(&gpus);
  if (gpus > 1) {
    const int other = (dev.device() + 1) % gpus;
    void* elsewhere = nullptr;
    SEAM_CUDA_OK(cudaSetDevice(other));
    SEAM_CUDA_OK(cudaMalloc(&elsewhere, 4096));
    SEAM_CUDA_OK(cudaSetDevice(dev.device()));
    expect("another GPU's memory", [&] { dev.all_reduce(elsewhere, d.base, 4, DType::f32, ReduceOp::sum, stream); }, ValueError(""));
    cudaFree(elsewhere);
  }
  // Two streams at once: a large call in flight on one, the next on another.
  {
    const size_t big = size_t{16} << 20;
    DeviceBuffer x(big * 4);
    cudaStream_t other;
    SEAM_CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    comm::Work first = dev.all_reduce(x.base, x.base, big, DType::f32, ReduceOp::sum, stream);
    expect("a second stream while a call is in flight",
           [&] { dev.all_reduce(d.base, d.base, 4, DType::f32, ReduceOp::sum, other); }, UsageError(""));
    first.wait();
    SEAM_CUDA_OK(cudaStreamDestroy(other));
  }
  // Still in step.
  std::vector<float> ones(4, 1.0f), out(4);
  SEAM_CUDA_OK(cudaMemcpyAsync(d.base, ones.data(), 16, cudaMemcpyHostToDevice, stream));
  dev.all_reduce(d.base, d.base, 4, DType::f32, ReduceOp::sum, stream).wait();
  SEAM_CUDA_OK(cudaMemcpy(out.data(), d.base, 16, cudaMemcpyDeviceToHost));
  if (out[3] != static_cast<float>(dev.size())) {
    ++failures;
    std::fprintf(stderr, "FAIL rank %d: after the refusals, all-reduce gave %g\n", dev.rank(), out[3]);
  }
  host.barrier().wait();
  return failures;
}

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

/// Create/destroy cycles: device memory and descriptors must come back to where they were.
int run_cycles(std::shared_ptr<comm::Communicator> host, int cycles, cudaStream_t stream) {
  DeviceBuffer d(64);
  auto cycle = [&] {
    auto dev = DeviceCommunicator::create(host);
    dev->all_reduce(d.base, d.base, 16, DType::f32, ReduceOp::sum, stream).wait();
  };
  cycle();  // warm: CUDA's own lazy allocations
  SEAM_CUDA_OK(cudaDeviceSynchronize());
  // The GPU's free memory counts every rank's allocations: measure with every rank between cycles.
  host->barrier().wait();
  size_t free_before = 0, total = 0;
  SEAM_CUDA_OK(cudaMemGetInfo(&free_before, &total));
  const int fds_before = open_fds();
  for (int i = 0; i < cycles; ++i) cycle();
  SEAM_CUDA_OK(cudaDeviceSynchronize());
  host->barrier().wait();
  size_t free_after = 0;
  SEAM_CUDA_OK(cudaMemGetInfo(&free_after, &total));
  const int fds_after = open_fds();
  const long long lost = static_cast<long long>(free_before) - static_cast<long long>(free_after);
  std::printf("rank %d: %d create/destroy cycles: device memory %+lld bytes, descriptors %d -> %d\n", host->rank(),
              cycles, -lost, fds_before, fds_after);
  // Other processes on the GPU allocate too: a leak would be a workspace (32 MiB) per cycle.
  if (lost > (64ll << 20) || fds_after > fds_before) {
    std::fprintf(stderr, "FAIL rank %d: create/destroy cycles leak\n", host->rank());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace seam::test::device

int main(int argc, char** argv) {
  using namespace seam::test::device;
  return run_check(argc, argv, "device checks", [](auto& world, cudaStream_t stream, const CheckOptions& o) {
    if (o.cycles) return run_cycles(world, o.cycles, stream);
    auto dev = seam::device::DeviceCommunicator::create(world);
    int failures = check_path(*dev, o.expect_path);
    failures += run_matrix(*dev, *world, o.large, stream);
    failures += run_fused(*dev, stream);
    if (dev->path() == "peer") failures += run_graph(*dev, stream);
    failures += run_queued(*dev, *world, stream);
    failures += run_refusals(*dev, *world, stream);
    failures += run_movement_dtypes(*dev, stream);
    return failures;
  });
}
