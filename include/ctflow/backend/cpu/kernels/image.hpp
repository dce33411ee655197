#pragma once
// CPU kernels of tf.image.resize and its input adjoint, rows (and images) split among threads.

#include <algorithm>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
#include <ctflow/ops/image.hpp>

namespace ctflow::backend::cpu {

template <class T, class SX, std::size_t H, std::size_t W> struct kernel<image::detail::resize_op<T, SX, H, W>> : image::detail::resize_op<T, SX, H, W> {
  using op = image::detail::resize_op<T, SX, H, W>;
  using op::R, op::g;
  void run(float* out, const expr::strided_view<T, R>& x) const {
    parallel_for(g.n * g.oh, grain_for(4 * g.ow * g.c), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t row = b; row < e; ++row) {
        const std::size_t n = row / g.oh, y = row % g.oh;
        const T* src = x.data + n * g.ih * g.iw * g.c;
        float* dst = out + row * g.ow * g.c;
        const image::detail::axis_sample sy = image::detail::sample_axis(y, g.ih, g.oh, g.method);
        for (std::size_t xo = 0; xo < g.ow; ++xo) {
          const image::detail::axis_sample sx = image::detail::sample_axis(xo, g.iw, g.ow, g.method);
          const T* tl = src + (sy.i0 * g.iw + sx.i0) * g.c;
          const T* tr = src + (sy.i0 * g.iw + sx.i1) * g.c;
          const T* bl = src + (sy.i1 * g.iw + sx.i0) * g.c;
          const T* br = src + (sy.i1 * g.iw + sx.i1) * g.c;
          for (std::size_t k = 0; k < g.c; ++k) {
            // TensorFlow's order of operations: along the width, then the height.
            const float top = float(tl[k]) + (float(tr[k]) - float(tl[k])) * sx.t;
            const float bottom = float(bl[k]) + (float(br[k]) - float(bl[k])) * sx.t;
            dst[xo * g.c + k] = top + (bottom - top) * sy.t;
          }
        }
      }
    });
  }
};

template <class SX> struct kernel<image::detail::resize_grad_op<SX>> : image::detail::resize_grad_op<SX> {
  using op = image::detail::resize_grad_op<SX>;
  using op::R, op::g, op::out_dims;
  void run(float* out, const expr::strided_view<float, R>& dy) const {
    std::fill_n(out, product(out_dims), 0.f);
    parallel_for(g.n, grain_for(4 * g.oh * g.ow * g.c), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t n = b; n < e; ++n)
        for (std::size_t y = 0; y < g.oh; ++y) {
          const image::detail::axis_sample sy = image::detail::sample_axis(y, g.ih, g.oh, g.method);
          float* dst = out + n * g.ih * g.iw * g.c;
          for (std::size_t xo = 0; xo < g.ow; ++xo) {
            const image::detail::axis_sample sx = image::detail::sample_axis(xo, g.iw, g.ow, g.method);
            const float* d = dy.data + ((n * g.oh + y) * g.ow + xo) * g.c;
            const auto add = [&](std::size_t iy, std::size_t ix, float w) {
              float* p = dst + (iy * g.iw + ix) * g.c;
              for (std::size_t k = 0; k < g.c; ++k) p[k] += d[k] * w;
            };
            add(sy.i0, sx.i0, (1 - sy.t) * (1 - sx.t));
            add(sy.i0, sx.i1, (1 - sy.t) * sx.t);
            add(sy.i1, sx.i0, sy.t * (1 - sx.t));
            add(sy.i1, sx.i1, sy.t * sx.t);
          }
        }
    });
  }
};

}  // namespace ctflow::backend::cpu
