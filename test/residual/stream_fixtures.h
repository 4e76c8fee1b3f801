// Test support for the residual stream: constant-filled host rows, a fake group sum that counts
// its runs, and small updates/reads that record what the stream asked of them.
#pragma once

#include <cstdint>

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"
#include "runtime/residual/add_norm.h"
#include "runtime/residual/batch.h"
#include "test/kernels/norm_reference.h"

namespace seam::test {

/// Rows x cols of one value (f32 unless told).
inline HostTensor rows_of(float value, int64_t rows = 2, int64_t cols = 4, DType dtype = DType::f32) {
  HostTensor t(dtype, rows, cols);
  t.fill(value);
  return t;
}

/// Every element of t equals v.
inline bool all_equal(const Tensor& t, float v) {
  for (int64_t r = 0; r < t.rows; ++r)
    for (int64_t c = 0; c < t.cols; ++c)
      if (get(t, r, c) != v) return false;
  return true;
}

/// A group sum over `ranks` ranks that all hold the same partial: scales it in place and counts.
struct FakeSum {
  float ranks = 2.0f;
  int runs = 0;
  Tensor operator()(const Tensor& partial, residual::ForwardBatch&) {
    ++runs;
    for (int64_t r = 0; r < partial.rows; ++r)
      for (int64_t c = 0; c < partial.cols; ++c) set(partial, r, c, get(partial, r, c) * ranks);
    return partial;
  }
};

/// A nonlinear update: residual' = residual + 2 h (counts its runs).
class DoubleAddUpdate final : public residual::StageUpdate {
 public:
  DoubleAddUpdate() : StageUpdate({.adds_plainly = false, .at_producer = false, .can_defer_across_layers = true}) {}
  const char* name() const override { return "double add"; }
  Tensor update(const Tensor& h, const Tensor& residual) const override {
    ++runs;
    kernels::add_inplace(residual, h);
    kernels::add_inplace(residual, h);
    return residual;
  }
  mutable int runs = 0;
};

/// A read whose "norm" is the identity: input = residual (after a plain add or the actual update).
/// Counts enter() calls.
class IdentityRead final : public residual::StageRead {
 public:
  IdentityRead() : StageRead({.norms_plainly = false, .before_gather = false}) {}
  Tensor enter(const Tensor& h) const override {
    ++enters;
    return h;
  }
  residual::ReadResult read(const Tensor& residual, residual::RmsNorm&, const residual::ReadOptions&) const override {
    return {{residual}, residual};
  }
  residual::ReadResult update_and_read(const residual::StageUpdate& update, const Tensor& h, const Tensor* residual,
                                       residual::RmsNorm& norm, const residual::ReadOptions& options) const override {
    if (!residual) return read(h, norm, options);
    return read(update.update(h, *residual), norm, options);
  }
  mutable int enters = 0;
};

/// A plain RMSNorm over `cols` with unit weight (fp32).
struct UnitNorm {
  explicit UnitNorm(int64_t cols = 4, float eps = 1e-6f) : weight(rows_of(1.0f, 1, cols)), norm(weight.view, eps) {}
  HostTensor weight;
  residual::RmsNorm norm;
};

/// A started batch whose stream is Written over `residual` (entered through an identity read), with
/// a partial of ones and a FakeSum (of 2 ranks) for the outputs the tests leave on it.
struct WrittenBatch {
  explicit WrittenBatch(float residual_value, int64_t rows = 2)
      : residual(rows_of(residual_value, rows)), partial(rows_of(1.0f, rows)) {
    residual::start(batch);
    residual::read_input(residual::LayerOutput(residual.view), batch, read, norm.norm);
  }
  /// Leaves `value` as a complete output (its sum over a group declared, where given).
  residual::LayerOutput leave(const Tensor& value, const residual::StageUpdate& update = residual::add_update(),
                              const residual::DeclaredSum* declared_sum = nullptr) {
    return residual::current(batch).leave(residual::ProducerOutput::complete_tensor(value), update, declared_sum);
  }
  /// Leaves the partial, its sum over `group` declared (completed by `sum` at the boundary).
  residual::LayerOutput leave_declared(SumGroup group, const residual::StageUpdate& update = residual::add_update()) {
    declared.emplace(residual::DeclaredSum{group, sum});
    return leave(partial.view, update, &*declared);
  }
  /// Leaves the partial unreduced over `group`, carrying `sum`.
  residual::LayerOutput leave_unreduced(SumGroup group = SumGroup::TP) {
    return residual::current(batch).leave(residual::ProducerOutput::unreduced(partial.view, group, sum),
                                          residual::add_update());
  }
  residual::ForwardBatch batch;
  HostTensor residual;
  IdentityRead read;
  UnitNorm norm;
  FakeSum sum;
  HostTensor partial;
  std::optional<residual::DeclaredSum> declared;
};

/// Runs f and checks it throws E with exactly `message`.
template <class E, class F>
void check_throws_message(F&& f, const std::string& message) {
  try {
    f();
    FAIL("expected an exception: " << message);
  } catch (const E& e) {
    CHECK(std::string(e.what()) == message);
  }
}

}  // namespace seam::test
