// Element I/O for the norm and quantisation kernels: activations are fp32, bf16 or fp16 in memory
// and always computed in FP32. One traits type per dtype, and one dispatch from DType to it, so
// every kernel is written once as a template over its I/O type.
#pragma once

#include <cstdint>
#include <string>

#include "seam/dtype.h"
#include "seam/errors.h"

namespace seam::kernels {

struct F32Io {
  using T = float;
  static float load(T v) { return v; }
  static T store(float v) { return v; }
};

struct Bf16Io {
  using T = uint16_t;
  static float load(T v) { return bf16_to_float(v); }
  static T store(float v) { return float_to_bf16(v); }
};

struct F16Io {
  using T = uint16_t;
  static float load(T v) { return f16_to_float(v); }
  static T store(float v) { return float_to_f16(v); }
};

/// Calls f(Io{}) with the traits of an activation dtype; TypeError for any other dtype.
template <class F>
decltype(auto) dispatch_io(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: return f(F32Io{});
    case DType::bf16: return f(Bf16Io{});
    case DType::f16: return f(F16Io{});
    default: break;
  }
  throw TypeError("norm kernels take float32, bfloat16 or float16 activations, not " +
                  std::string(dtype_name(dtype)));
}

/// Loads element i of an fp32/bf16/fp16 array as FP32 (for weights, read once per call).
inline float load_as_float(const void* data, DType dtype, int64_t i) {
  return dispatch_io(dtype, [&](auto io) {
    using Io = decltype(io);
    return Io::load(static_cast<const typename Io::T*>(data)[i]);
  });
}

}  // namespace seam::kernels
