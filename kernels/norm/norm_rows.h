// Internal: the row pipeline every add+RMSNorm variant shares (plain, fused reduce, quantised).
// One row at a time: sum the row's inputs in FP32 into a per-thread scratch row, write the
// rounded residual, take the inverse RMS, then hand the row with its inverse RMS and folded weight
// to an emitter that stores it (rounded output, or FP8 with a per-token scale).
#pragma once

#include <cstdint>

#include <cmath>
#include <span>
#include <vector>

#include "kernels/norm/io_dtype.h"
#include "kernels/norm/rms_norm.h"

namespace seam::kernels::detail {

/// The tensors of one norm call. partials holds the summand(s): one activation, or k partial
/// sums to reduce first. residual (in/out), extra and reduced_out may be null.
struct NormInputs {
  std::span<const Tensor> partials;
  const Tensor* residual = nullptr;
  const Tensor* extra = nullptr;
  const Tensor* reduced_out = nullptr;
};

/// Checks dtypes, shapes and devices against the first summand (TypeError / ValueError).
void validate(const NormInputs& in, const RmsNormSpec& norm, const Tensor& out, DType out_dtype);

/// Per-thread FP32 scratch rows, grown on demand (no allocation once warm).
struct RowScratch {
  std::vector<float> sum;     ///< the row's FP32 sum, then its normalised values
  std::vector<float> weight;  ///< the folded weight
};
RowScratch& row_scratch(int64_t cols);

/// Fills w[c] with the FP32 factor the normalised row is multiplied by (w, or 1 + w for Gemma).
void fold_weight(const RmsNormSpec& norm, int64_t cols, float* w);

template <class Io>
const typename Io::T* row_of(const Tensor& t, int64_t r) {
  return static_cast<const typename Io::T*>(t.row(r));
}
template <class Io>
typename Io::T* mutable_row_of(const Tensor& t, int64_t r) {
  return static_cast<typename Io::T*>(t.row(r));
}

/// s = this row's FP32 sum in the reference order; writes the rounded residual (and reduced sum).
/// The residual must not overlap the summands (restrict lets the loops vectorise).
template <class Io>
void sum_row(const NormInputs& in, int64_t r, int64_t cols, float* __restrict s) {
  using T = typename Io::T;
  const T* __restrict first = row_of<Io>(in.partials[0], r);
  for (int64_t c = 0; c < cols; ++c) s[c] = Io::load(first[c]);
  if (in.partials.size() > 1) {
    for (size_t i = 1; i < in.partials.size(); ++i) {
      const T* __restrict p = row_of<Io>(in.partials[i], r);
      for (int64_t c = 0; c < cols; ++c) s[c] += Io::load(p[c]);
    }
    // The sum lands in the I/O dtype first, exactly as an unfused all-reduce would return it.
    T* reduced = in.reduced_out ? mutable_row_of<Io>(*in.reduced_out, r) : nullptr;
    for (int64_t c = 0; c < cols; ++c) {
      const T v = Io::store(s[c]);
      if (reduced) reduced[c] = v;
      s[c] = Io::load(v);
    }
  }
  if (!in.residual) return;
  T* __restrict residual = mutable_row_of<Io>(*in.residual, r);
  if (in.extra) {
    const T* __restrict extra = row_of<Io>(*in.extra, r);
    for (int64_t c = 0; c < cols; ++c) {
      const float x = (s[c] + Io::load(residual[c])) + Io::load(extra[c]);
      s[c] = x;
      residual[c] = Io::store(x);
    }
  } else {
    for (int64_t c = 0; c < cols; ++c) {
      const float x = s[c] + Io::load(residual[c]);
      s[c] = x;
      residual[c] = Io::store(x);
    }
  }
}

/// 1 / sqrt(mean(s²) + eps), the square sum accumulated in FP32 over eight fixed lanes (a fixed
/// order the compiler can vectorise).
inline float inverse_rms(const float* s, int64_t cols, float eps) {
  float lane[8] = {};
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8)
    for (int j = 0; j < 8; ++j) lane[j] += s[c + j] * s[c + j];
  for (int j = 0; c < cols; ++c, ++j) lane[j] += s[c] * s[c];
  const float total = ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  return 1.0f / std::sqrt(total / static_cast<float>(cols) + eps);
}

/// Runs the pipeline over every row: emit(r, s, inv, w) receives the row's FP32 sum s (scratch the
/// emitter may overwrite), its inverse RMS and the folded weight; the normalised value of column c
/// is (s[c] · inv) · w[c].
template <class Io, class Emit>
void for_each_normed_row(const NormInputs& in, const RmsNormSpec& norm, Emit&& emit) {
  const int64_t rows = in.partials[0].rows, cols = in.partials[0].cols;
  if (rows == 0 || cols == 0) return;
  RowScratch& scratch = row_scratch(cols);
  float* s = scratch.sum.data();
  float* w = scratch.weight.data();
  fold_weight(norm, cols, w);
  for (int64_t r = 0; r < rows; ++r) {
    sum_row<Io>(in, r, cols, s);
    emit(r, s, inverse_rms(s, cols, norm.eps), static_cast<const float*>(w));
  }
}

/// Whether the AVX2 + F16C row loops run: the CPU has them and no test switched them off.
bool use_avx2();
/// For tests: allow (the default) or forbid the AVX2 + F16C row loops. Returns whether the CPU has them.
bool allow_avx2(bool allow);

// Every call below its entry is inlined (flatten), so the whole row pipeline is compiled for the
// entry's instruction set; a call GCC cannot inline falls back to baseline code, never the reverse.
template <class Rows>
[[gnu::target("avx2,f16c"), gnu::flatten]] void run_rows_avx2(DType io, Rows& rows) {
  dispatch_io(io, rows);
}
template <class Rows>
[[gnu::flatten]] void run_rows_baseline(DType io, Rows& rows) {
  dispatch_io(io, rows);
}

/// Calls rows(Io{}) for the activation dtype `io` — a loop over every row of one call — compiled
/// for the best instruction set this CPU has (chosen at run time). FMA stays off: the reference's
/// rounding order has a separate multiply and add.
template <class Rows>
void run_rows(DType io, Rows&& rows) {
  if (use_avx2()) {
    run_rows_avx2(io, rows);
  } else {
    run_rows_baseline(io, rows);
  }
}

}  // namespace seam::kernels::detail
