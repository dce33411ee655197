#pragma once
/// @brief tf.nn.max_pool2d and avg_pool2d over NHWC input, with TensorFlow's SAME / VALID /
/// explicit windows (averages are over the elements inside the image only), their gradients, and global
/// average / max pooling:
///
///     auto p = nn::max_pool2d<2, 2>(x);                  // 2x2 windows, strides 2, VALID
///     auto q = nn::avg_pool2d<3, 3, 2, 2, nn::SAME>(x);   // 3x3 windows, strides 2, SAME

#include <algorithm>
#include <limits>

#include "../reduction.hpp"
#include "conv.hpp"

namespace ctflow::nn {

namespace detail {

struct pool_geometry {
  std::size_t n, h, w, c, kh, kw, sh, sw, oh, ow, pt, pl;
  /// The window of output (oy, ox), clipped to the image: [y0, y1) x [x0, x1).
  void window(std::size_t oy, std::size_t ox, std::size_t& y0, std::size_t& y1, std::size_t& x0, std::size_t& x1) const {
    const std::ptrdiff_t ys = std::ptrdiff_t(oy * sh) - std::ptrdiff_t(pt), xs = std::ptrdiff_t(ox * sw) - std::ptrdiff_t(pl);
    y0 = std::size_t(std::max<std::ptrdiff_t>(ys, 0));
    x0 = std::size_t(std::max<std::ptrdiff_t>(xs, 0));
    y1 = std::size_t(std::min<std::ptrdiff_t>(ys + std::ptrdiff_t(kh), std::ptrdiff_t(h)));
    x1 = std::size_t(std::min<std::ptrdiff_t>(xs + std::ptrdiff_t(kw), std::ptrdiff_t(w)));
  }
  /// f(n, oy, ox) for every output pixel, images split among threads.
  template <class F> void each_output(F&& f) const {
    backend::cpu::parallel_for(n, 1, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i)
        for (std::size_t oy = 0; oy < oh; ++oy)
          for (std::size_t ox = 0; ox < ow; ++ox) f(i, oy, ox);
    });
  }
};
inline pool_geometry make_pool_geometry(const dims_t<4>& x, std::size_t kh, std::size_t kw, std::size_t sh, std::size_t sw, padding p) {
  const auto gh = spatial(x[1], kh, sh, 1, p, 0), gw = spatial(x[2], kw, sw, 1, p, 1);
  return {x[0], x[1], x[2], x[3], kh, kw, sh, sw, gh.out, gw.out, gh.pad_before, gw.pad_before};
}

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, bool Max> struct pool_kernel {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], KH, SH, 1, Pad, 0),
                                     static_spatial(SX::extents[2], KW, SW, 1, Pad, 1), SX::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  pool_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& x) const {
    using V = compute_t<T>;
    g.each_output([&](std::size_t n, std::size_t oy, std::size_t ox) {
      std::size_t y0, y1, x0, x1;
      g.window(oy, ox, y0, y1, x0, x1);
      T* o = out + ((n * g.oh + oy) * g.ow + ox) * g.c;
      const V scale = Max ? V(1) : V(1) / V((y1 - y0) * (x1 - x0));  // the valid elements only, as TensorFlow
      // Blocks of channels accumulate in registers (a local array: no aliasing with x).
      constexpr std::size_t block = 64;
      for (std::size_t c0 = 0; c0 < g.c; c0 += block) {
        const std::size_t cn = std::min(block, g.c - c0);
        V acc[block];
        for (std::size_t c = 0; c < block; ++c) acc[c] = Max ? -std::numeric_limits<V>::infinity() : V(0);
        for (std::size_t y = y0; y < y1; ++y)
          for (std::size_t xx = x0; xx < x1; ++xx) {
            const T* in = x.data + ((n * g.h + y) * g.w + xx) * g.c + c0;
            for (std::size_t c = 0; c < cn; ++c) {
              if constexpr (Max) acc[c] = V(in[c]) > acc[c] ? V(in[c]) : acc[c];
              else acc[c] += V(in[c]);
            }
          }
        for (std::size_t c = 0; c < cn; ++c) o[c0 + c] = T(acc[c] * scale);
      }
    });
  }
};

/// Runs f(n, oy) over every output row, images split among threads, zeroing the adjoint out
/// as it goes: the input rows a row of windows first touches are zeroed just before it (so they
/// are in cache when the windows add to them), and the rows no window touches at the end.
template <class T, class F> void each_output_row_zeroing(const pool_geometry& g, T* out, F&& f) {
  const std::size_t row = g.w * g.c;
  backend::cpu::parallel_for(g.n, 1, 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t n = b; n < e; ++n) {
      T* image = out + n * g.h * row;
      std::size_t zeroed = 0;
      for (std::size_t oy = 0; oy < g.oh; ++oy) {
        const std::ptrdiff_t ys = std::ptrdiff_t(oy * g.sh) - std::ptrdiff_t(g.pt);
        const std::size_t y1 = std::size_t(std::clamp<std::ptrdiff_t>(ys + std::ptrdiff_t(g.kh), 0, std::ptrdiff_t(g.h)));
        if (y1 > zeroed) {
          std::fill(image + zeroed * row, image + y1 * row, T(0));
          zeroed = y1;
        }
        f(n, oy);
      }
      std::fill(image + zeroed * row, image + g.h * row, T(0));
    }
  });
}

/// MaxPoolGrad: each g goes to the first element of its window (row-major order, as
/// TensorFlow's CPU kernel) equal to the window's maximum y. Branch-free per channel: a channel
/// takes g at the first match and is then done.
template <class T, class SX> struct max_pool_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& y, const expr::strided_view<T, 4>& dy) const {
    using V = compute_t<T>;
    each_output_row_zeroing(g, out, [&](std::size_t n, std::size_t oy) {
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        const std::size_t at = ((n * g.oh + oy) * g.ow + ox) * g.c;
        const T* top = y.data + at;
        const T* d = dy.data + at;
        constexpr std::size_t block = 64;
        for (std::size_t c0 = 0; c0 < g.c; c0 += block) {
          const std::size_t cn = std::min(block, g.c - c0);
          V done[block] = {};
          for (std::size_t yy = y0; yy < y1; ++yy)
            for (std::size_t xx = x0; xx < x1; ++xx) {
              const std::size_t in = ((n * g.h + yy) * g.w + xx) * g.c + c0;
              const T* xi = x.data + in;
              T* o = out + in;
#pragma GCC ivdep
              for (std::size_t c = 0; c < cn; ++c) {  // x, y, dy and dx never overlap
                const bool take = done[c] == V(0) && V(xi[c]) == V(top[c0 + c]);
                o[c] = T(V(o[c]) + (take ? V(d[c0 + c]) : V(0)));
                done[c] += V(take);  // a full store: a masked one would stall the next load
              }
            }
        }
      }
    });
  }
};

/// AvgPoolGrad: each g spread evenly over the valid elements of its window.
template <class T, class SX> struct avg_pool_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& dy) const {
    using V = compute_t<T>;
    each_output_row_zeroing(g, out, [&](std::size_t n, std::size_t oy) {
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        const T* d = dy.data + ((n * g.oh + oy) * g.ow + ox) * g.c;
        const V scale = V(1) / V((y1 - y0) * (x1 - x0));
        for (std::size_t yy = y0; yy < y1; ++yy)
          for (std::size_t xx = x0; xx < x1; ++xx) {
            T* o = out + ((n * g.h + yy) * g.w + xx) * g.c;
            for (std::size_t c = 0; c < g.c; ++c) o[c] = T(V(o[c]) + V(d[c]) * scale);
          }
      }
    });
  }
};

template <bool Max, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, class X> auto pool2d(X&& input) {
  using T = value_t<X>;
  using SX = shape_t<X>;
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  static_assert(KH > 0 && KW > 0 && SH > 0 && SW > 0, "ctflow::nn::pool2d: window and strides must be positive");
  constexpr bool rank_ok = SX::rank == 4;
  CTFLOW_STATIC_CHECK(rank_ok, concat(fixed_string("ctflow::nn::pool2d: input must be [n,h,w,c]: "), shape_string_v<SX>));
  CTFLOW_STATIC_CHECK(is_floating_v<T>, fixed_string("ctflow::nn::pool2d: input must be floating"));
  if constexpr (rank_ok && is_floating_v<T>) {
    // Every window must hold an element of the image: explicit pads stay below the window.
    static_assert(Pad.top < KH && Pad.bottom < KH && Pad.left < KW && Pad.right < KW,
                  "ctflow::nn::pool2d: explicit padding must be smaller than the window");
    constexpr bool window_ok = window_fits(SX::extents[1], KH, 1, Pad, 0) && window_fits(SX::extents[2], KW, 1, Pad, 1);
    CTFLOW_STATIC_CHECK(window_ok, concat(fixed_string("ctflow::nn::pool2d: the window is larger than the input with its padding: "), shape_string_v<SX>));
    if constexpr (window_ok) {
      const auto d = input.dims();
      if (!window_fits(d[1], KH, 1, Pad, 0) || !window_fits(d[2], KW, 1, Pad, 1))
        throw_shape_error("ctflow::nn::pool2d", "the window is larger than the input with its padding", d, dims_t<2>{KH, KW});
      pool_kernel<T, SX, KH, KW, SH, SW, Pad, Max> k;
      k.g = make_pool_geometry(d, KH, KW, SH, SW, Pad);
      k.out_dims = {k.g.n, k.g.oh, k.g.ow, k.g.c};
      return expr::make_computed(k, std::forward<X>(input));
    }
  }
}

}  // namespace detail

/// @brief tf.nn.max_pool2d(input, ksize, strides, padding) over NHWC input: `max_pool2d<kh, kw,
/// stride_h = kh, stride_w = kw, SAME or VALID = VALID>(x)`.
template <std::size_t KH, std::size_t KW = KH, std::size_t SH = KH, std::size_t SW = KW, padding Pad = VALID, Expression X>
auto max_pool2d(X&& input) {
  return detail::pool2d<true, KH, KW, SH, SW, Pad>(std::forward<X>(input));
}

/// @brief tf.nn.avg_pool2d over NHWC input; with SAME, windows average the elements inside the
/// image only.
template <std::size_t KH, std::size_t KW = KH, std::size_t SH = KH, std::size_t SW = KW, padding Pad = VALID, Expression X>
auto avg_pool2d(X&& input) {
  return detail::pool2d<false, KH, KW, SH, SW, Pad>(std::forward<X>(input));
}

/// @brief Keras's GlobalAveragePooling2D: the mean over height and width, [n, c].
template <Expression X> auto global_avg_pool2d(X&& input) { return reduce_mean<1, 2>(std::forward<X>(input)); }
/// @brief Keras's GlobalMaxPooling2D: the maximum over height and width, [n, c].
template <Expression X> auto global_max_pool2d(X&& input) { return reduce_max<1, 2>(std::forward<X>(input)); }

}  // namespace ctflow::nn
