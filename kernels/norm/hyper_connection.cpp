#include <cstdint>
#include "kernels/norm/hyper_connection.h"

#include <string>

#include "kernels/norm/elementwise.h"
#include "kernels/norm/io_dtype.h"

namespace seam::kernels {
namespace {

int64_t stream_width(const Tensor& streams, int n) {
  if (n < 1 || streams.cols % n != 0)
    throw ValueError("hyper-connection: " + std::to_string(streams.cols) + " columns do not hold " + std::to_string(n) +
                     " streams");
  return streams.cols / n;
}

}  // namespace

Tensor hyper_stream(const Tensor& streams, int n, int i) {
  const int64_t width = stream_width(streams, n);
  Tensor view = streams;
  view.data = static_cast<char*>(streams.data) + static_cast<size_t>(i * width) * dtype_size(streams.dtype);
  view.cols = width;
  return view;
}

void hyper_expand(const Tensor& h, const Tensor& streams, int n) {
  for (int i = 0; i < n; ++i) copy(h, hyper_stream(streams, n, i));
}

void hyper_combine(const Tensor& streams, int n, std::span<const float> weights, const Tensor& dst) {
  if (n > kMaxHyperStreams) throw ValueError("hyper-connection: at most 16 streams");
  Tensor views[kMaxHyperStreams];
  for (int i = 0; i < n; ++i) views[i] = hyper_stream(streams, n, i);
  weighted_sum(std::span<const Tensor>(views, n), weights, dst);
}

void hyper_post(const Tensor& streams, int n, const Tensor& out, std::span<const float> res, std::span<const float> post) {
  const int64_t width = stream_width(streams, n);
  if (out.rows != streams.rows || out.cols != width || out.dtype != streams.dtype)
    throw ValueError("hyper-connection: the layer output does not match one stream");
  if (n > kMaxHyperStreams || res.size() != static_cast<size_t>(n * n) || post.size() != static_cast<size_t>(n))
    throw ValueError("hyper-connection: coefficients do not match the stream count");
  dispatch_io(streams.dtype, [&](auto io) {
    using Io = decltype(io);
    using T = typename Io::T;
    float old[kMaxHyperStreams];
    for (int64_t r = 0; r < streams.rows; ++r) {
      T* row = static_cast<T*>(streams.row(r));
      const T* o = static_cast<const T*>(out.row(r));
      for (int64_t c = 0; c < width; ++c) {
        for (int j = 0; j < n; ++j) old[j] = Io::load(row[j * width + c]);
        const float contribution = Io::load(o[c]);
        for (int i = 0; i < n; ++i) {
          float acc = 0.0f;
          for (int j = 0; j < n; ++j) acc += res[i * n + j] * old[j];
          row[i * width + c] = Io::store(acc + post[i] * contribution);
        }
      }
    }
  });
}

}  // namespace seam::kernels
