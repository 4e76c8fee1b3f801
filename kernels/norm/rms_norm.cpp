#include <cstdint>
#include "kernels/norm/rms_norm.h"

#include <atomic>
#include <string>

#include "kernels/cpu_has.h"
#include "kernels/device/device_ops.h"
#include "kernels/norm/norm_rows.h"

namespace seam::kernels {
namespace detail {

namespace {

void require_same_shape(const Tensor& t, const Tensor& like, const char* what) {
  if (t.rows != like.rows || t.cols != like.cols)
    throw ValueError(std::string("norm kernel: ") + what + " is " + std::to_string(t.rows) + "x" +
                     std::to_string(t.cols) + ", expected " + std::to_string(like.rows) + "x" +
                     std::to_string(like.cols));
  if (t.device.is_cuda()) throw ValueError(std::string("norm kernel: ") + what + " is not in host memory");
}

void require_dtype(const Tensor& t, DType dtype, const char* what) {
  if (t.dtype != dtype)
    throw TypeError(std::string("norm kernel: ") + what + " is " + std::string(dtype_name(t.dtype)) +
                    ", expected " + std::string(dtype_name(dtype)));
}

}  // namespace

void validate(const NormInputs& in, const RmsNormSpec& norm, const Tensor& out, DType out_dtype) {
  if (in.partials.empty()) throw ValueError("norm kernel: no input");
  const Tensor& x = in.partials[0];
  dispatch_io(x.dtype, [](auto) {});  // rejects non-activation dtypes
  for (const Tensor& p : in.partials) {
    require_same_shape(p, x, "a partial input");
    require_dtype(p, x.dtype, "a partial input");
  }
  const std::pair<const Tensor*, const char*> optional[] = {
      {in.residual, "the residual"}, {in.extra, "the extra addition"}, {in.reduced_out, "the reduced output"}};
  for (auto [t, what] : optional) {
    if (!t) continue;
    require_same_shape(*t, x, what);
    require_dtype(*t, x.dtype, what);
  }
  require_same_shape(out, x, "the output");
  require_dtype(out, out_dtype, "the output");
  if (x.cols > 0 && !norm.weight) throw ValueError("norm kernel: the norm has no weight");
}

RowScratch& row_scratch(int64_t cols) {
  thread_local RowScratch scratch;
  if (scratch.sum.size() < static_cast<size_t>(cols)) {
    scratch.sum.resize(cols);
    scratch.weight.resize(cols);
  }
  return scratch;
}

namespace {

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && cpu_has_f16c();
  return has;
}

std::atomic<bool> avx2_allowed{true};

}  // namespace

bool use_avx2() { return cpu_has_avx2() && avx2_allowed.load(std::memory_order_relaxed); }

bool allow_avx2(bool allow) {
  avx2_allowed.store(allow, std::memory_order_relaxed);
  return cpu_has_avx2();
}

void fold_weight(const RmsNormSpec& norm, int64_t cols, float* w) {
  const float offset = norm.form == NormWeight::gemma ? 1.0f : 0.0f;
  dispatch_io(norm.weight_dtype, [&](auto io) {
    using Io = decltype(io);
    const auto* weight = static_cast<const typename Io::T*>(norm.weight);
    for (int64_t c = 0; c < cols; ++c) w[c] = offset + Io::load(weight[c]);
  });
}

}  // namespace detail

namespace {

void run_norm(const detail::NormInputs& in, const RmsNormSpec& norm, const Tensor& out) {
  detail::validate(in, norm, out, in.partials[0].dtype);
  detail::run_rows(out.dtype, [&](auto io) {
    using Io = decltype(io);
    detail::for_each_normed_row<Io>(in, norm, [&](int64_t r, const float* __restrict s, float inv, const float* __restrict w) {
      typename Io::T* __restrict o = detail::mutable_row_of<Io>(out, r);
      for (int64_t c = 0; c < out.cols; ++c) o[c] = Io::store((s[c] * inv) * w[c]);
    });
  });
}

}  // namespace

void rms_norm(const Tensor& x, const RmsNormSpec& norm, const Tensor& out) {
  if (any_on_device({&x, &out})) {
    require_same_device({&out}, x, "rms_norm");
    return device_ops().rms_norm(x, norm, out);
  }
  run_norm({.partials = {&x, 1}}, norm, out);
}

void add_rms_norm(const Tensor& x, const Tensor& residual, const Tensor* extra, const RmsNormSpec& norm,
                  const Tensor& out) {
  if (any_on_device({&x, &residual, extra, &out})) {
    require_same_device({&residual, extra, &out}, x, "add_rms_norm");
    return device_ops().add_rms_norm(x, residual, extra, norm, out);
  }
  run_norm({.partials = {&x, 1}, .residual = &residual, .extra = extra}, norm, out);
}

void reduce_add_rms_norm(std::span<const Tensor> partials, const Tensor& residual, const RmsNormSpec& norm,
                         const Tensor& out, const Tensor* reduced_out) {
  for (const Tensor& p : partials)
    if (any_on_device({&p, &residual, &out, reduced_out}))
      throw NotSupportedError("reduce_add_rms_norm runs on host memory (on device, the fused all-reduce + add + "
                              "RMSNorm is a DeviceCommunicator call)");
  run_norm({.partials = partials, .residual = &residual, .reduced_out = reduced_out}, norm, out);
}

}  // namespace seam::kernels
