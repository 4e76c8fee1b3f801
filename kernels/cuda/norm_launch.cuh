// Host-side launch plumbing shared by the CUDA norm launchers: checks, dtype dispatch to the
// device I/O types, RowArgs from tensors, and the launch shape (one block per row, the row's FP32
// sum in dynamic shared memory).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

#include "kernels/cuda/norm_device.cuh"
#include "kernels/norm/rms_norm.h"
#include "layouts/config.h"
#include "seam/errors.h"
#include "seam/tensor.h"

namespace seam::kernels::cuda::launch {

inline void require_device(const Tensor& t, const Tensor& like, const char* what) {
  if (!t.device.is_cuda()) throw ValueError(std::string("CUDA norm kernel: ") + what + " is not in CUDA memory");
  if (t.rows != like.rows || t.cols != like.cols) throw ValueError(std::string("CUDA norm kernel: ") + what + " has another shape");
}

/// Calls f(Io{}) with the device I/O type of an activation dtype.
template <class F>
decltype(auto) dispatch(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(device::F32Io{});
    case DType::bf16: return f(device::Bf16Io{});
    case DType::f16: return f(device::F16Io{});
    default: break;
  }
  throw TypeError("CUDA norm kernels take float32, bfloat16 or float16 activations");
}

inline int weight_code(DType dtype) {
  switch (dtype) {
    case DType::f32: return 0;
    case DType::bf16: return 1;
    case DType::f16: return 2;
    default: throw TypeError("a norm weight is float32, bfloat16 or float16");
  }
}

/// RowArgs with one summand (x) or none yet (the caller fills summands), residual and extra.
template <class Io>
device::RowArgs<Io> row_args(const Tensor& first, const Tensor* residual, const Tensor* extra, const RmsNormSpec& norm) {
  using T = typename Io::T;
  device::RowArgs<Io> a{};
  a.summands[0] = static_cast<const T*>(first.data);
  a.k = 1;
  a.residual = residual ? static_cast<T*>(residual->data) : nullptr;
  a.extra = extra ? static_cast<const T*>(extra->data) : nullptr;
  a.weight = norm.weight;
  a.weight_dtype = weight_code(norm.weight_dtype);
  a.gemma = norm.form == NormWeight::gemma;
  a.eps = norm.eps;
  a.cols = first.cols;
  a.stride = first.row_stride;
  a.residual_stride = residual ? residual->row_stride : 0;
  a.extra_stride = extra ? extra->row_stride : 0;
  return a;
}

/// Whether 16-byte packs can serve every row of these tensors: the columns divide into packs and
/// every base pointer and row stride is 16-byte aligned.
inline bool packable(std::initializer_list<const Tensor*> tensors, int64_t cols) {
  for (const Tensor* t : tensors) {
    if (!t) continue;
    const size_t element = dtype_size(t->dtype), pack = 16 / element;
    if (cols % static_cast<int64_t>(pack) != 0 || t->row_stride % static_cast<int64_t>(pack) != 0 ||
        reinterpret_cast<uintptr_t>(t->data) % 16 != 0)
      return false;
  }
  return true;
}

/// Threads per block: one per `per_thread` columns, in whole warps, at most 1024.
inline int threads_for(int64_t cols, int64_t per_thread = 1) {
  const int64_t work = (cols + per_thread - 1) / per_thread;
  return static_cast<int>(std::clamp<int64_t>((work + 31) / 32 * 32, 32, 1024));
}

/// SEAM_CUDA_NORM_THREADS (threads a row for every call, 0 = by rows) and SEAM_CUDA_NORM (rows in
/// registers only with "registers"), from the process's configuration.
inline int64_t threads_override() { return Config::get().cuda_norm_threads; }
inline bool shared_rows_forced() { return Config::get().cuda_norm == "shared"; }

/// Launches a norm kernel, as a programmatic dependent of the stream's previous kernel where
/// SEAM_CUDA_NORM_PDL is 1 (the kernels wait for it before touching memory).
template <class... Params, class... Args>
cudaError_t launch_rows(void (*kernel)(Params...), int blocks, int threads, size_t shared, cudaStream_t stream,
                        Args&&... args) {
  if (!Config::get().cuda_norm_pdl) {
    kernel<<<blocks, threads, shared, stream>>>(std::forward<Args>(args)...);
    return cudaGetLastError();
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(threads));
  config.dynamicSmemBytes = shared;
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

/// The register-resident row's shape (norm_row_registers) for a call of `rows` rows: K packs per
/// thread and T threads (at most max_register_threads(K)); false where the row does not fit.
/// Few rows: a pack a thread where it fits (the row's latency is the call's); many: about 256
/// threads a row, several rows an SM in flight. A function of the call's shape only, so the fused
/// kernel takes the same.
inline bool register_shape(int64_t cols, int64_t pack, int64_t rows, int* k, int* threads) {
  constexpr int64_t kManyRows = 64;
  const int64_t packs = cols / pack;
  if (shared_rows_forced() || packs < 1) return false;
  const int64_t target = threads_override() ? threads_override() : rows < kManyRows ? 1024 : 256;
  for (int64_t per_thread = std::max<int64_t>(1, (packs + target - 1) / target);
       per_thread <= device::kMaxRegisterPacks; ++per_thread) {
    const int64_t t = ((packs + per_thread - 1) / per_thread + 31) / 32 * 32;
    if (t <= device::max_register_threads(static_cast<int>(per_thread))) {
      *k = static_cast<int>(per_thread);
      *threads = static_cast<int>(t);
      return true;
    }
  }
  return false;
}

/// Calls f(std::integral_constant<int, K>{}) for K in 1..kMaxRegisterPacks.
template <class F>
decltype(auto) dispatch_packs(int k, F&& f) {
  switch (k) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

/// Dynamic shared memory for one row's FP32 sum; raises the kernel's limit above the 48 KiB default.
template <class Kernel>
cudaError_t reserve_row_memory(Kernel kernel, int64_t cols, size_t* bytes) {
  *bytes = static_cast<size_t>(cols) * sizeof(float);
  if (*bytes <= 48 * 1024) return cudaSuccess;
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(*bytes));
}

}  // namespace seam::kernels::cuda::launch
