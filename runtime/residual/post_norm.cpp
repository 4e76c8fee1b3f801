#include "runtime/residual/post_norm.h"

#include "kernels/norm/elementwise.h"

namespace seam::residual {
namespace {

class PlainRead final : public StageRead {
 public:
  PlainRead() : StageRead({.norms_plainly = false, .before_gather = false}) {}
  ReadResult read(const Tensor& residual, RmsNorm&, const ReadOptions&) const override { return {{residual}, residual}; }
  ReadResult update_and_read(const StageUpdate& update, const Tensor& h, const Tensor* residual, RmsNorm& norm,
                             const ReadOptions& options) const override {
    return read(residual ? update.update(h, *residual) : h, norm, options);
  }
};

}  // namespace

PostNormUpdate::PostNormUpdate(RmsNorm& post_norm, bool at_producer)
    : StageUpdate({.adds_plainly = false, .at_producer = at_producer, .can_defer_across_layers = true}),
      post_norm_(post_norm) {}

Tensor PostNormUpdate::update(const Tensor& h, const Tensor& residual) const {
  kernels::add_inplace(residual, post_norm_.apply(h));
  return residual;
}

const StageRead& plain_read() {
  static const PlainRead instance;
  return instance;
}

}  // namespace seam::residual
