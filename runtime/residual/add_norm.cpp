#include "runtime/residual/add_norm.h"

#include <string>

#include "kernels/norm/elementwise.h"
#include "seam/errors.h"

namespace seam::residual {
namespace {

class AddUpdate final : public StageUpdate {
 public:
  AddUpdate() : StageUpdate({.adds_plainly = true, .at_producer = false, .can_defer_across_layers = true}) {}
  const char* name() const override { return "ADD"; }
  Tensor update(const Tensor& h, const Tensor& residual) const override {
    kernels::add_inplace(residual, h);
    return residual;
  }
};

// The norm read, with or without quantisation support (NORM_QUANT_READ vs NORM_READ).
class NormRead final : public StageRead {
 public:
  explicit NormRead(bool quantizes) : StageRead({.norms_plainly = true, .before_gather = false}), quantizes_(quantizes) {}

  ReadResult read(const Tensor& residual, RmsNorm& norm, const ReadOptions& options) const override {
    check_options(options);
    if (residual.empty()) return {{residual}, residual};
    // A post-residual addition joins the residual's FP32 sum: residual += extra, then the norm.
    const Tensor* extra = options.post_residual_addition;
    if (options.quant == QuantFormat::fp8_per_token) {
      const kernels::Fp8Rows q = extra ? norm.add_apply_fp8(*extra, residual) : norm.apply_fp8(residual);
      return {{q.values, q.scales}, residual};
    }
    return {{extra ? norm.add_apply(*extra, residual) : norm.apply(residual)}, residual};
  }

  ReadResult update_and_read(const StageUpdate& update, const Tensor& h, const Tensor* residual, RmsNorm& norm,
                             const ReadOptions& options) const override {
    if (!residual) return read(h, norm, options);  // the stack's start: h becomes the residual
    // A nonlinear update runs as its own step (its rounded result is what the norm reads).
    if (!update.adds_plainly()) return read(update.update(h, *residual), norm, options);
    check_options(options);
    if (h.empty()) return {{h}, *residual};
    if (options.quant == QuantFormat::fp8_per_token) {
      const kernels::Fp8Rows q = norm.add_apply_fp8(h, *residual, options.post_residual_addition);
      return {{q.values, q.scales}, *residual};
    }
    return {{norm.add_apply(h, *residual, options.post_residual_addition)}, *residual};
  }

 private:
  void check_options(const ReadOptions& options) const {
    if (quantizes_ || (options.quant == QuantFormat::none && !options.post_residual_addition)) return;
    throw NotSupportedError(std::string("a norm read with quant_format='") + quant_format_name(options.quant) +
                            "' or a post-residual addition");
  }

  bool quantizes_;
};

}  // namespace

const char* quant_format_name(QuantFormat format) {
  return format == QuantFormat::fp8_per_token ? "fp8_per_token" : "";
}

const StageUpdate& add_update() {
  static const AddUpdate instance;
  return instance;
}

const StageRead& norm_read() {
  static const NormRead instance(false);
  return instance;
}

const StageRead& norm_quant_read() {
  static const NormRead instance(true);
  return instance;
}

LayerResidual plain_residual() { return {&norm_quant_read(), &add_update(), &norm_read(), &add_update()}; }

}  // namespace seam::residual
