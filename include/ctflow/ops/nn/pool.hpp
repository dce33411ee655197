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
};
inline pool_geometry make_pool_geometry(const dims_t<4>& x, std::size_t kh, std::size_t kw, std::size_t sh, std::size_t sw, padding p) {
  const auto gh = spatial(x[1], kh, sh, 1, p, 0), gw = spatial(x[2], kw, sw, 1, p, 1);
  return {x[0], x[1], x[2], x[3], kh, kw, sh, sw, gh.out, gw.out, gh.pad_before, gw.pad_before};
}

/// f(c0, load, store) for the channels [c0, c0 + lanes) of a pixel's c channels: xsimd batches
/// (the last one loaded and stored partially) where the dtype has them, else one channel at a
/// time in its compute type. `select(mask, a, b)` works on what `load` returns.
template <class T, class F> void each_channel_vector(std::size_t c, F&& f) {
  namespace cpu = backend::cpu;
  if constexpr (cpu::simd_type_v<T>) {
    using B = cpu::batch<T>;
    constexpr std::size_t L = cpu::lanes<T>;
    std::size_t c0 = 0;
    for (; c0 + L <= c; c0 += L)
      f(c0, [](const T* p) { return B::load_unaligned(p); }, [](T* p, const B& v) { v.store_unaligned(p); });
    if (c0 < c) {
      const std::size_t n = c - c0;
      f(c0, [n](const T* p) { return cpu::load_partial(p, n); }, [n](T* p, const B& v) { cpu::store_partial(p, v, n); });
    }
  } else {
    using V = compute_t<T>;
    for (std::size_t c0 = 0; c0 < c; ++c0) f(c0, [](const T* p) { return V(*p); }, [](T* p, V v) { *p = T(v); });
  }
}
template <class B> B select(bool m, const B& a, const B& b) { return m ? a : b; }
using xsimd::select;

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, bool Max> struct pool_kernel {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], KH, SH, 1, Pad, 0),
                                     static_spatial(SX::extents[2], KW, SW, 1, Pad, 1), SX::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  pool_geometry g{};
  /// Separably, one output row at a time: the rows of its windows are combined into one row
  /// (contiguous, in L1), then each window's columns of it. A NaN never wins, as in TensorFlow.
  void run(T* out, const expr::strided_view<T, 4>& x) const {
    using V = compute_t<T>;
    constexpr V init = Max ? -std::numeric_limits<V>::infinity() : V(0);
    const auto op = [](V a, V b) { return Max ? (b > a ? b : a) : a + b; };
    const std::size_t row = g.w * g.c;
    backend::cpu::parallel_for(g.n * g.oh, 1, 1, [&](std::size_t b, std::size_t e) {
      ctflow::detail::buffer<V> scratch(row + g.c, false);
      V* rows = scratch.data();
      V* acc = rows + row;
      for (std::size_t r = b; r < e; ++r) {
        const std::size_t n = r / g.oh, oy = r % g.oh;
        std::size_t y0, y1, x0, x1;
        g.window(oy, 0, y0, y1, x0, x1);
        // Up to three input rows in one pass (the common windows), then any further ones.
        const T* a = x.data + (n * g.h + y0) * row;
        const T* b2 = y1 - y0 > 1 ? a + row : nullptr;
        const T* c3 = y1 - y0 > 2 ? a + 2 * row : nullptr;
        if (c3) for (std::size_t i = 0; i < row; ++i) rows[i] = op(op(op(init, V(a[i])), V(b2[i])), V(c3[i]));
        else if (b2) for (std::size_t i = 0; i < row; ++i) rows[i] = op(op(init, V(a[i])), V(b2[i]));
        else for (std::size_t i = 0; i < row; ++i) rows[i] = op(init, V(a[i]));
        for (std::size_t y = y0 + 3; y < y1; ++y) {
          const T* in = x.data + (n * g.h + y) * row;
          for (std::size_t i = 0; i < row; ++i) rows[i] = op(rows[i], V(in[i]));
        }
        T* o = out + r * g.ow * g.c;
        for (std::size_t ox = 0; ox < g.ow; ++ox, o += g.c) {
          g.window(oy, ox, y0, y1, x0, x1);
          std::fill_n(acc, g.c, init);
          for (std::size_t xx = x0; xx < x1; ++xx)
            for (std::size_t c = 0; c < g.c; ++c) acc[c] = op(acc[c], rows[xx * g.c + c]);
          const V scale = Max ? V(1) : V(1) / V((y1 - y0) * (x1 - x0));  // the valid elements only, as TensorFlow
          for (std::size_t c = 0; c < g.c; ++c) o[c] = T(acc[c] * scale);
        }
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
    each_output_row_zeroing(g, out, [&](std::size_t n, std::size_t oy) {
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        const std::size_t at = ((n * g.oh + oy) * g.ow + ox) * g.c;
        each_channel_vector<T>(g.c, [&](std::size_t c0, auto load, auto store) {
          using B = decltype(load(x.data));
          const B top = load(y.data + at + c0), d = load(dy.data + at + c0), zero(0);
          decltype(top == top) done(false);
          for (std::size_t yy = y0; yy < y1; ++yy)
            for (std::size_t xx = x0; xx < x1; ++xx) {
              const std::size_t in = ((n * g.h + yy) * g.w + xx) * g.c + c0;
              const auto take = (load(x.data + in) == top) && !done;
              store(out + in, load(out + in) + select(take, d, zero));
              done = done || take;
            }
        });
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
