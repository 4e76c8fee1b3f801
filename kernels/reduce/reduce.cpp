#include "kernels/reduce/reduce.h"

#include <cstring>
#include <string>

#include "kernels/cpu_has.h"
#include "kernels/reduce/reduce_table.h"
#include "layouts/config.h"
#include "seam/errors.h"

namespace seam::kernels {
namespace {

int dtype_slot(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f64: return 1;
    case DType::i32: return 2;
    case DType::bf16: return 3;
    case DType::f16: return 4;
    default: throw ValueError("reduce: no reduction kernel for dtype " + std::string(dtype_name(t)));
  }
}

const detail::IsaKernels& kernels_of(ReduceIsa isa) {
  switch (isa) {
    case ReduceIsa::avx512bf16: return detail::avx512bf16_kernels;
    case ReduceIsa::avx512: return detail::avx512_kernels;
    case ReduceIsa::avx2: return detail::avx2_kernels;
    case ReduceIsa::generic: break;
  }
  return detail::generic_kernels;
}

}  // namespace

bool reduce_isa_supported(ReduceIsa isa) {
  switch (isa) {
    case ReduceIsa::avx512bf16:
      return reduce_isa_supported(ReduceIsa::avx512) && cpu_has_avx512bf16();
    case ReduceIsa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && cpu_has_f16c();
    case ReduceIsa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case ReduceIsa::generic: return true;
  }
  return false;
}

ReduceIsa best_reduce_isa() {
  // From the most capable set down: the first this CPU runs, at most SEAM_REDUCE_ISA's.
  static const ReduceIsa best = [] {
    constexpr ReduceIsa kSets[] = {ReduceIsa::avx512bf16, ReduceIsa::avx512, ReduceIsa::avx2,
                                   ReduceIsa::generic};
    const std::string& cap = Config::get().reduce_isa;
    bool allowed = cap.empty();
    for (ReduceIsa isa : kSets) {
      allowed = allowed || reduce_isa_name(isa) == cap;
      if (allowed && reduce_isa_supported(isa)) return isa;
    }
    return ReduceIsa::generic;
  }();
  return best;
}

std::string_view reduce_isa_name(ReduceIsa isa) {
  switch (isa) {
    case ReduceIsa::avx512bf16: return "avx512bf16";
    case ReduceIsa::avx512: return "avx512";
    case ReduceIsa::avx2: return "avx2";
    case ReduceIsa::generic: break;
  }
  return "generic";
}

void reduce(ReduceIsa isa, void* dst, std::span<const void* const> srcs, size_t count,
            DType dtype, ReduceOp op, Store store) {
  if (srcs.empty()) throw ValueError("reduce: no source buffers");
  if (count == 0) return;
  const auto& k = kernels_of(isa);
  const int slot = dtype_slot(dtype), o = static_cast<int>(op);
  if (store == Store::streaming)
    k.reduce_streaming[slot][o](dst, nullptr, srcs.data(), srcs.size(), count);
  else
    k.reduce[slot][o](dst, srcs.data(), srcs.size(), count);
}

void reduce_and_keep(ReduceIsa isa, void* dst, void* kept, std::span<const void* const> srcs,
                     size_t count, DType dtype, ReduceOp op) {
  if (srcs.empty()) throw ValueError("reduce_and_keep: no source buffers");
  if (kept == nullptr) throw ValueError("reduce_and_keep: no buffer to keep the result in");
  if (count == 0) return;
  kernels_of(isa).reduce_streaming[dtype_slot(dtype)][static_cast<int>(op)](dst, kept, srcs.data(),
                                                                            srcs.size(), count);
}

void reduce_and_keep(void* dst, void* kept, std::span<const void* const> srcs, size_t count,
                     DType dtype, ReduceOp op) {
  reduce_and_keep(best_reduce_isa(), dst, kept, srcs, count, dtype, op);
}

void reduce(void* dst, std::span<const void* const> srcs, size_t count, DType dtype, ReduceOp op,
            Store store) {
  reduce(best_reduce_isa(), dst, srcs, count, dtype, op, store);
}

void copy(void* dst, const void* src, size_t bytes, Store store) {
  if (bytes == 0) return;
  if (store == Store::streaming)
    kernels_of(best_reduce_isa()).copy_streaming(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

void reduce_into(void* dst, const void* src, size_t count, DType dtype, ReduceOp op) {
  const void* srcs[2] = {dst, src};
  reduce(dst, srcs, count, dtype, op);
}

void reduce2(void* dst, const void* a, const void* b, size_t count, DType dtype, ReduceOp op) {
  const void* srcs[2] = {a, b};
  reduce(dst, srcs, count, dtype, op);
}

}  // namespace seam::kernels
