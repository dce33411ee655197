#pragma once
// Reference kernels of tf.image.resize and its input adjoint: each output element samples the
// input where image::detail::sample_axis says (the op's definition of its sampling), in double:
// nearest neighbour the element itself, bilinear the four neighbours weighted by
// (1 - ty, ty) x (1 - tx, tx).

#include <cstddef>
#include <vector>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/ops/image.hpp>

namespace ctflow::backend::reference {

namespace image_detail {

/// f(n, o, sy, sx) for every output pixel (n, y, x): o its offset in elements, sy and sx where
/// it samples the input's height and width.
template <class F> void each_output(const image::detail::resize_geometry& g, F&& f) {
  for (std::size_t n = 0; n < g.n; ++n)
    for (std::size_t y = 0; y < g.oh; ++y) {
      const image::detail::axis_sample sy = image::detail::sample_axis(y, g.ih, g.oh, g.method);
      for (std::size_t x = 0; x < g.ow; ++x)
        f(n, ((n * g.oh + y) * g.ow + x) * g.c, sy, image::detail::sample_axis(x, g.iw, g.ow, g.method));
    }
}

/// The input element of channel 0 at pixel (y, x) of image n.
inline std::size_t at(const image::detail::resize_geometry& g, std::size_t n, std::size_t y, std::size_t x) { return ((n * g.ih + y) * g.iw + x) * g.c; }

/// The input pixels output (sy, sx) reads and their weights, as f(y, x, w).
template <class F> void each_sample(const image::detail::resize_geometry& g, const image::detail::axis_sample& sy, const image::detail::axis_sample& sx, F&& f) {
  if (g.method == image::ResizeMethod::NEAREST_NEIGHBOR) {
    f(sy.i0, sx.i0, 1.0);
    return;
  }
  const double ty = sy.t, tx = sx.t;
  f(sy.i0, sx.i0, (1 - ty) * (1 - tx));
  f(sy.i0, sx.i1, (1 - ty) * tx);
  f(sy.i1, sx.i0, ty * (1 - tx));
  f(sy.i1, sx.i1, ty * tx);
}

}  // namespace image_detail

template <class T, class SX, std::size_t H, std::size_t W> struct kernel<image::detail::resize_op<T, SX, H, W>> : image::detail::resize_op<T, SX, H, W> {
  using op = image::detail::resize_op<T, SX, H, W>;
  using op::R, op::g;
  void run(float* out, const expr::strided_view<T, R>& x) const {
    using namespace image_detail;
    each_output(g, [&](std::size_t n, std::size_t o, const image::detail::axis_sample& sy, const image::detail::axis_sample& sx) {
      for (std::size_t k = 0; k < g.c; ++k) {
        double v = 0;
        each_sample(g, sy, sx, [&](std::size_t y, std::size_t xx, double w) { v += w * double(x.data[at(g, n, y, xx) + k]); });
        out[o + k] = float(v);
      }
    });
  }
};

/// ResizeBilinearGrad / ResizeNearestNeighborGrad: each output's adjoint added to the input
/// elements it sampled, times their weights.
template <class SX> struct kernel<image::detail::resize_grad_op<SX>> : image::detail::resize_grad_op<SX> {
  using op = image::detail::resize_grad_op<SX>;
  using op::R, op::g, op::out_dims;
  void run(float* out, const expr::strided_view<float, R>& dy) const {
    using namespace image_detail;
    std::vector<double> acc(product(out_dims));
    each_output(g, [&](std::size_t n, std::size_t o, const image::detail::axis_sample& sy, const image::detail::axis_sample& sx) {
      each_sample(g, sy, sx, [&](std::size_t y, std::size_t xx, double w) {
        for (std::size_t k = 0; k < g.c; ++k) acc[at(g, n, y, xx) + k] += w * double(dy.data[o + k]);
      });
    });
    for (std::size_t i = 0; i < acc.size(); ++i) out[i] = float(acc[i]);
  }
};

}  // namespace ctflow::backend::reference
