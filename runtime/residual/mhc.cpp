#include <cstdint>
#include "runtime/residual/mhc.h"

#include <algorithm>
#include <string>

#include "kernels/norm/hyper_connection.h"
#include "seam/errors.h"

namespace seam::residual {
namespace {

void check_coefficients(const MhcCoefficients& c, int streams) {
  if (c.pre.size() != static_cast<size_t>(streams) || c.post.size() != static_cast<size_t>(streams) ||
      c.res.size() != static_cast<size_t>(streams * streams))
    throw ValueError("MHC coefficients must have " + std::to_string(streams) + " pre/post and " +
                     std::to_string(streams * streams) + " res entries");
}

// The streams' coefficient state has no all-gather (the reference's limit, kept).
[[noreturn]] void reject_gather() { throw NotSupportedError("Unsupported: h_res/h_post allgather not implemented."); }

}  // namespace

MhcLayer::MhcLayer(int streams, MhcCoefficients attention, MhcCoefficients ffn, bool last_layer)
    : streams_(streams), attention_(std::move(attention)), ffn_(std::move(ffn)), last_layer_(last_layer) {
  if (streams < 1 || streams > kernels::kMaxHyperStreams) throw ValueError("MHC needs 1 to 16 streams");
  check_coefficients(attention_, streams);
  check_coefficients(ffn_, streams);
}

Tensor MhcLayer::workspace(Buffer& buffer, DType dtype, int64_t rows, int64_t cols) {
  const size_t bytes = static_cast<size_t>(rows * cols) * dtype_size(dtype);
  if (buffer.bytes() < bytes) buffer = Buffer(bytes);
  return Tensor::contiguous(buffer.data(), dtype, rows, cols);
}

Tensor MhcLayer::read_streams(const Tensor& streams, const MhcCoefficients& c, RmsNorm& norm) {
  const Tensor combined = workspace(combined_, streams.dtype, streams.rows, streams.cols / streams_);
  kernels::hyper_combine(streams, streams_, c.pre, combined);
  return norm.apply(combined);
}

MhcLayer::AttentionRead::AttentionRead(MhcLayer& layer)
    : StageRead({.norms_plainly = false, .before_gather = false}), layer_(layer) {}

Tensor MhcLayer::AttentionRead::enter(const Tensor& h) const {
  const Tensor streams = workspace(layer_.expanded_, h.dtype, h.rows, h.cols * layer_.streams_);
  kernels::hyper_expand(h, streams, layer_.streams_);
  return streams;
}

ReadResult MhcLayer::AttentionRead::read(const Tensor& residual, RmsNorm& norm, const ReadOptions& options) const {
  if (options.quant != QuantFormat::none)
    throw NotSupportedError(std::string("an MHC attention input in quant_format='") + quant_format_name(options.quant) + "'");
  return {{layer_.read_streams(residual, layer_.attention_, norm)}, residual};
}

ReadResult MhcLayer::AttentionRead::update_and_read(const StageUpdate&, const Tensor& h, const Tensor* residual,
                                                    RmsNorm& norm, const ReadOptions& options) const {
  if (residual) throw NotSupportedError("an MHC layer takes its input written back");
  return read(enter(h), norm, options);  // the stack's start
}

MhcLayer::AttentionUpdate::AttentionUpdate(MhcLayer& layer)
    : StageUpdate({.adds_plainly = false, .at_producer = false, .can_defer_across_layers = false}), layer_(layer) {}

Tensor MhcLayer::AttentionUpdate::update(const Tensor& h, const Tensor& residual) const {
  kernels::hyper_post(residual, layer_.streams_, h, layer_.attention_.res, layer_.attention_.post);
  return residual;
}

void MhcLayer::AttentionUpdate::require_residual_gather() const { reject_gather(); }

MhcLayer::FfnRead::FfnRead(MhcLayer& layer) : StageRead({.norms_plainly = false, .before_gather = false}), layer_(layer) {}

ReadResult MhcLayer::FfnRead::read(const Tensor&, RmsNorm&, const ReadOptions&) const {
  throw NotSupportedError("an MHC FFN input read without its attention");
}

ReadResult MhcLayer::FfnRead::update_and_read(const StageUpdate& update, const Tensor& h, const Tensor* residual,
                                              RmsNorm& norm, const ReadOptions& options) const {
  if (&update != &layer_.attention_update_ || !residual)
    throw NotSupportedError(std::string("an MHC FFN input after update=") + update.name());
  if (options.quant != QuantFormat::none || options.post_residual_addition)
    throw NotSupportedError(std::string("a norm read with quant_format='") + quant_format_name(options.quant) +
                            "' or a post-residual addition");
  const Tensor streams = update.update(h, *residual);
  return {{layer_.read_streams(streams, layer_.ffn_, norm)}, streams};
}

MhcLayer::FfnUpdate::FfnUpdate(MhcLayer& layer)
    : StageUpdate({.adds_plainly = false, .at_producer = true, .can_defer_across_layers = false}), layer_(layer) {}

void MhcLayer::FfnUpdate::require_residual_gather() const { reject_gather(); }

Tensor MhcLayer::FfnUpdate::update(const Tensor& h, const Tensor& residual) const {
  kernels::hyper_post(residual, layer_.streams_, h, layer_.ffn_.res, layer_.ffn_.post);
  if (!layer_.last_layer_) return residual;
  // The stack's end: contract the streams back to one hidden state (their mean).
  const Tensor contracted = workspace(layer_.contracted_, residual.dtype, residual.rows, h.cols);
  float mean[kernels::kMaxHyperStreams];
  std::fill_n(mean, layer_.streams_, 1.0f / static_cast<float>(layer_.streams_));
  kernels::hyper_combine(residual, layer_.streams_, std::span<const float>(mean, layer_.streams_), contracted);
  return contracted;
}

}  // namespace seam::residual
