// Device-side building blocks of the CUDA norm kernels: element I/O per activation dtype (FP32
// compute, round-to-nearest-even stores, as the host kernels), block reductions, and the row
// pipeline every variant shares. One thread block normalises one row at a time; the row's FP32
// sum stays in dynamic shared memory (cols floats) between the passes.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace seam::kernels::cuda::device {

struct F32Io {
  using T = float;
  static constexpr int kCode = 0;  ///< RowArgs::weight_dtype of a weight in this dtype
  static __device__ __forceinline__ float load(T v) { return v; }
  static __device__ __forceinline__ T store(float v) { return v; }
};
struct Bf16Io {
  using T = __nv_bfloat16;
  static constexpr int kCode = 1;
  static __device__ __forceinline__ float load(T v) { return __bfloat162float(v); }
  static __device__ __forceinline__ T store(float v) { return __float2bfloat16_rn(v); }
};
struct F16Io {
  using T = __half;
  static constexpr int kCode = 2;
  static __device__ __forceinline__ float load(T v) { return __half2float(v); }
  static __device__ __forceinline__ T store(float v) { return __float2half_rn(v); }
};

/// Block-wide reduction (sum or max) of one float per thread; every thread gets the result.
/// Fixed order (warp shuffles, then warp 0 over the warp partials), so results are deterministic.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // partial[] may still be read by a previous reduction
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : 0.0f;  // absmax and sums are both >= 0-neutral here
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  return v;
}

/// Most summands a row sums (one activation, or one partial per peer).
inline constexpr int kMaxSummands = 8;

/// The pointers of one row set, passed by value: k summands (one activation, or every rank's
/// partial), the residual (in/out, may be null), an extra addition (may be null), the weight.
template <class Io>
struct RowArgs {
  const typename Io::T* summands[kMaxSummands];  ///< base pointers (row r at + r * stride)
  int k;
  typename Io::T* residual;
  const typename Io::T* extra;
  const void* weight;
  int weight_dtype;  ///< 0 f32, 1 bf16, 2 f16
  bool gemma;
  float eps;
  int64_t cols, stride, residual_stride, extra_stride;
};

__device__ __forceinline__ float load_weight(const void* w, int dtype, int64_t c) {
  switch (dtype) {
    case 1: return __bfloat162float(static_cast<const __nv_bfloat16*>(w)[c]);
    case 2: return __half2float(static_cast<const __half*>(w)[c]);
    default: return static_cast<const float*>(w)[c];
  }
}

/// Fills s (shared, cols floats) with row r's FP32 sum in the reference order — summands in order,
/// a multi-summand sum rounded to the I/O dtype first (as an unfused all-reduce returns it), then
/// + residual + extra — writes the rounded residual, and returns 1 / sqrt(mean(s²) + eps).
template <class Io>
__device__ float sum_row(const RowArgs<Io>& a, int64_t r, float* s) {
  float square_sum = 0.0f;
  for (int64_t c = threadIdx.x; c < a.cols; c += blockDim.x) {
    float x = Io::load(a.summands[0][r * a.stride + c]);
    if (a.k > 1) {
      for (int i = 1; i < a.k; ++i) x += Io::load(a.summands[i][r * a.stride + c]);
      x = Io::load(Io::store(x));
    }
    if (a.residual) {
      typename Io::T* residual = a.residual + r * a.residual_stride;
      x += Io::load(residual[c]);
      if (a.extra) x += Io::load(a.extra[r * a.extra_stride + c]);
      residual[c] = Io::store(x);
    }
    s[c] = x;
    square_sum += x * x;
  }
  const float total = block_reduce<false>(square_sum);
  return 1.0f / sqrtf(total / static_cast<float>(a.cols) + a.eps);  // IEEE, as the host kernel
}

/// Loads and stores of 16-byte packs (8 bf16/fp16 or 4 fp32 values) for the vectorised row loops,
/// used when every row pointer and stride is 16-byte aligned.
template <class Io>
inline constexpr int kPack = 16 / sizeof(typename Io::T);

__device__ __forceinline__ uint4 load_pack(const void* p) { return *static_cast<const uint4*>(p); }
__device__ __forceinline__ void store_pack(void* p, uint4 v) { *static_cast<uint4*>(p) = v; }

/// Programmatic dependent launch (sm_90): wait for the kernel before this one (its memory
/// visible), and let the next one start launching. Without the launch attribute both do nothing.
__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void let_next_kernel_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

/// sum_row with 16-byte accesses: thread t owns columns [t·P, t·P + P) of every block-wide stride.
template <class Io>
__device__ float sum_row_packed(const RowArgs<Io>& a, int64_t r, float* s) {
  using T = typename Io::T;
  constexpr int P = kPack<Io>;
  float square_sum = 0.0f;
  for (int64_t c = threadIdx.x * P; c < a.cols; c += static_cast<int64_t>(blockDim.x) * P) {
    float x[P];
    uint4 raw = load_pack(a.summands[0] + r * a.stride + c);
    const T* v = reinterpret_cast<const T*>(&raw);
    for (int j = 0; j < P; ++j) x[j] = Io::load(v[j]);
    if (a.k > 1) {
      for (int i = 1; i < a.k; ++i) {
        raw = load_pack(a.summands[i] + r * a.stride + c);
        for (int j = 0; j < P; ++j) x[j] += Io::load(v[j]);
      }
      for (int j = 0; j < P; ++j) x[j] = Io::load(Io::store(x[j]));
    }
    if (a.residual) {
      T* residual = a.residual + r * a.residual_stride + c;
      raw = load_pack(residual);
      for (int j = 0; j < P; ++j) x[j] += Io::load(v[j]);
      if (a.extra) {
        raw = load_pack(a.extra + r * a.extra_stride + c);
        for (int j = 0; j < P; ++j) x[j] += Io::load(v[j]);
      }
      uint4 rounded;
      T* out = reinterpret_cast<T*>(&rounded);
      for (int j = 0; j < P; ++j) out[j] = Io::store(x[j]);
      store_pack(residual, rounded);
    }
    for (int j = 0; j < P; ++j) {
      s[c + j] = x[j];
      square_sum += x[j] * x[j];
    }
  }
  const float total = block_reduce<false>(square_sum);
  return 1.0f / sqrtf(total / static_cast<float>(a.cols) + a.eps);
}

/// Most 16-byte packs a thread holds in registers in norm_row_registers.
inline constexpr int kMaxRegisterPacks = 8;

/// Most threads a block of norm_row_registers with K packs a thread may have: its kernels are
/// compiled to fit that many (__launch_bounds__), and the launch shape keeps to it.
__host__ __device__ constexpr int max_register_threads(int k) { return k <= 1 ? 1024 : k == 2 ? 768 : k <= 4 ? 512 : 256; }

/// The whole row in registers: thread t owns packs t, t + T, ... (K of them, T = blockDim). The
/// first summand's, the residual's and the weight's loads are all issued before any of them is
/// used, so one memory latency covers them and a block keeps 3K packs per thread in flight; the
/// FP32 values and their order per element are sum_row_packed's and store_row_fp8's. Stores the
/// rounded residual, then the normalised row rounded to out, or (kFp8) its per-token FP8 read to q
/// and *scale_out.
template <class Io, int K, bool kFp8>
__device__ __forceinline__ void norm_row_registers(const RowArgs<Io>& a, int64_t r, typename Io::T* out,
                                                   __nv_fp8_e4m3* q, float* scale_out) {
  using T = typename Io::T;
  constexpr int P = kPack<Io>;
  const int64_t packs = a.cols / P;
  T* residual = a.residual ? a.residual + r * a.residual_stride : nullptr;
  const float offset = a.gemma ? 1.0f : 0.0f;
  // A weight of the activations' dtype on a 16-byte boundary loads in packs, kept raw until used.
  const bool packed_weight = a.weight_dtype == Io::kCode && reinterpret_cast<uintptr_t>(a.weight) % 16 == 0;
  float x[K][P];
  uint4 raw[K], residual_raw[K], weight_raw[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (p >= packs) continue;
    raw[k] = load_pack(a.summands[0] + r * a.stride + p * P);
    if (residual) residual_raw[k] = load_pack(residual + p * P);
    if (packed_weight) weight_raw[k] = load_pack(static_cast<const T*>(a.weight) + p * P);
  }
  auto weight = [&](int k, int64_t p, int j) {
    return offset + (packed_weight ? Io::load(reinterpret_cast<const T*>(&weight_raw[k])[j])
                                   : load_weight(a.weight, a.weight_dtype, p * P + j));
  };
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const T* v = reinterpret_cast<const T*>(&raw[k]);
#pragma unroll
    for (int j = 0; j < P; ++j) x[k][j] = Io::load(v[j]);
  }
  // Adds K loaded packs to x; loads a row's K packs, all issued before any is added.
  auto add_packs = [&](const uint4 (&packs_raw)[K]) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const T* v = reinterpret_cast<const T*>(&packs_raw[k]);
#pragma unroll
      for (int j = 0; j < P; ++j) x[k][j] += Io::load(v[j]);
    }
  };
  auto load_packs = [&](const T* row) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
      if (p < packs) raw[k] = load_pack(row + p * P);
    }
  };
  if (a.k > 1) {
    for (int i = 1; i < a.k; ++i) {
      load_packs(a.summands[i] + r * a.stride);
      add_packs(raw);
    }
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
      for (int j = 0; j < P; ++j) x[k][j] = Io::load(Io::store(x[k][j]));
  }
  if (residual) {
    add_packs(residual_raw);
    if (a.extra) {
      load_packs(a.extra + r * a.extra_stride);
      add_packs(raw);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
      if (p >= packs) continue;
      uint4 rounded;
      T* o = reinterpret_cast<T*>(&rounded);
#pragma unroll
      for (int j = 0; j < P; ++j) o[j] = Io::store(x[k][j]);
      store_pack(residual + p * P, rounded);
    }
  }
  float square_sum = 0.0f;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
    if (p >= packs) continue;
#pragma unroll
    for (int j = 0; j < P; ++j) square_sum += x[k][j] * x[k][j];
  }
  const float inv = 1.0f / sqrtf(block_reduce<false>(square_sum) / static_cast<float>(a.cols) + a.eps);
  if constexpr (!kFp8) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
      if (p >= packs) continue;
      uint4 packed;
      T* o = reinterpret_cast<T*>(&packed);
#pragma unroll
      for (int j = 0; j < P; ++j) o[j] = Io::store((x[k][j] * inv) * weight(k, p, j));
      store_pack(out + p * P, packed);
    }
  } else {
    float absmax = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
      if (p >= packs) continue;
#pragma unroll
      for (int j = 0; j < P; ++j) {
        x[k][j] = Io::load(Io::store((x[k][j] * inv) * weight(k, p, j)));
        absmax = fmaxf(absmax, fabsf(x[k][j]));
      }
    }
    absmax = block_reduce<true>(absmax);
    const float scale = fmaxf(absmax / 448.0f, 1.0f / (448.0f * 512.0f));
    const float inverse = 1.0f / scale;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t p = threadIdx.x + static_cast<int64_t>(k) * blockDim.x;
      if (p >= packs) continue;
#pragma unroll
      for (int j = 0; j < P; ++j) q[p * P + j] = __nv_fp8_e4m3(fminf(fmaxf(x[k][j] * inverse, -448.0f), 448.0f));
    }
    if (threadIdx.x == 0) *scale_out = scale;
  }
}

/// Normalises and stores the row rounded, in 16-byte packs (the columns sum_row_packed gave this thread).
template <class Io>
__device__ void store_normalised_packed(const RowArgs<Io>& a, float inv, const float* s, typename Io::T* out) {
  using T = typename Io::T;
  constexpr int P = kPack<Io>;
  const float offset = a.gemma ? 1.0f : 0.0f;
  for (int64_t c = threadIdx.x * P; c < a.cols; c += static_cast<int64_t>(blockDim.x) * P) {
    uint4 packed;
    T* o = reinterpret_cast<T*>(&packed);
    for (int j = 0; j < P; ++j) o[j] = Io::store((s[c + j] * inv) * (offset + load_weight(a.weight, a.weight_dtype, c + j)));
    store_pack(out + c, packed);
  }
}

/// y = s · inv · w (FP32), in place in s.
template <class Io>
__device__ void normalise_row(const RowArgs<Io>& a, float inv, float* s) {
  for (int64_t c = threadIdx.x; c < a.cols; c += blockDim.x) {
    const float w = (a.gemma ? 1.0f : 0.0f) + load_weight(a.weight, a.weight_dtype, c);
    s[c] = (s[c] * inv) * w;
  }
}

/// Stores the normalised row rounded to the I/O dtype.
template <class Io>
__device__ void store_row(const float* y, int64_t cols, typename Io::T* out) {
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = Io::store(y[c]);
}

/// Quantises the normalised row per token: its activation-dtype rounding, scale = max(absmax/448,
/// 1/(448·512)), q = e4m3(clamp(y / scale)) saturating, round to nearest even.
template <class Io>
__device__ void store_row_fp8(float* y, int64_t cols, __nv_fp8_e4m3* q, float* scale_out) {
  float absmax = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    y[c] = Io::load(Io::store(y[c]));
    absmax = fmaxf(absmax, fabsf(y[c]));
  }
  absmax = block_reduce<true>(absmax);
  const float scale = fmaxf(absmax / 448.0f, 1.0f / (448.0f * 512.0f));
  const float inverse = 1.0f / scale;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    q[c] = __nv_fp8_e4m3(fminf(fmaxf(y[c] * inverse, -448.0f), 448.0f));
  if (threadIdx.x == 0) *scale_out = scale;
}

/// One row from shared memory: sums it into `row` (sum_row, or sum_row_packed where kPacked), then
/// stores the normalised row rounded to out's row r, or (kFp8) its per-token FP8 read to q's row r
/// and scales[r]. The caller syncs the block before `row` is reused.
template <class Io, bool kFp8, bool kPacked>
__device__ __forceinline__ void norm_row(const RowArgs<Io>& a, int64_t r, float* row, typename Io::T* out,
                                         int64_t out_stride, __nv_fp8_e4m3* q, int64_t q_stride, float* scales) {
  const float inv = kPacked ? sum_row_packed(a, r, row) : sum_row(a, r, row);
  if constexpr (kFp8) {
    normalise_row(a, inv, row);
    store_row_fp8<Io>(row, a.cols, q + r * q_stride, scales + r);
  } else if constexpr (kPacked) {
    store_normalised_packed(a, inv, row, out + r * out_stride);
  } else {
    normalise_row(a, inv, row);  // each thread keeps to its own columns: no barrier needed
    store_row<Io>(row, a.cols, out + r * out_stride);
  }
}

}  // namespace seam::kernels::cuda::device
