#pragma once
/// @brief tf.nn.max_pool2d and avg_pool2d over NHWC input, with TensorFlow's SAME / VALID /
/// explicit windows (averages are over the elements inside the image only), their gradients, and global
/// average / max pooling:
///
///     auto p = nn::max_pool2d<2, 2>(x);                  // 2x2 windows, strides 2, VALID
///     auto q = nn::avg_pool2d<3, 3, 2, 2, nn::SAME>(x);   // 3x3 windows, strides 2, SAME

#include <algorithm>
#include <limits>
#include <vector>

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
  /// Prefetches, a little ahead in each of the window's rows of `image`, what the windows after it
  /// read first; only for input too large for the cache.
  template <class T> void prefetch_window(const T* image, std::size_t y0, std::size_t y1, std::size_t x0) const {
    if (n * h * w * c * sizeof(T) < backend::cpu::cache_bytes) return;
    for (std::size_t y = y0; y < y1; ++y)
      backend::cpu::prefetch(reinterpret_cast<const char*>(image + (y * w + x0) * c) + backend::cpu::prefetch_distance, sw * c * sizeof(T));
  }
};
inline pool_geometry make_pool_geometry(const dims_t<4>& x, std::size_t kh, std::size_t kw, std::size_t sh, std::size_t sw, padding p) {
  const auto gh = spatial(x[1], kh, sh, 1, p, 0), gw = spatial(x[2], kw, sw, 1, p, 1);
  return {x[0], x[1], x[2], x[3], kh, kw, sh, sw, gh.out, gw.out, gh.pad_before, gw.pad_before};
}

/// f(c0, load, store) for the channels [c0, c0 + lanes) of a pixel's c channels: xsimd batches
/// (the last one loaded and stored partially) where the dtype has them, else one channel at a
/// time in its compute type (load and store then also take compute-type pointers). `select(mask,
/// a, b)` works on what `load` returns.
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
    for (std::size_t c0 = 0; c0 < c; ++c0)
      f(c0, [](const auto* p) { return V(*p); }, [](auto* p, V v) { *p = std::remove_pointer_t<decltype(p)>(v); });
  }
}
template <class B> B select(bool m, const B& a, const B& b) { return m ? a : b; }
using xsimd::select;

/// v > m ? v : m per lane, so that a NaN v never wins. On x86 that is exactly the max
/// instruction (it returns its second operand when either is NaN): one instruction, no
/// compare-and-blend in the chain.
template <class B> B max_of(const B& v, const B& m) {
  if constexpr (backend::cpu::is_batch_v<B>) {
#if defined(__SSE2__)
    return xsimd::max(v, m);
#else
    return xsimd::select(v > m, v, m);
#endif
  } else {
    return v > m ? v : m;
  }
}

/// f(rows, cols) for a window of rows x cols elements: as compile-time constants when it is the
/// whole KH x KW window (every window but those the image's border clips), so that the loops
/// over it unroll.
template <std::size_t KH, std::size_t KW, class F> void on_window(std::size_t rows, std::size_t cols, F&& f) {
  if (rows == KH && cols == KW) f(std::integral_constant<std::size_t, KH>{}, std::integral_constant<std::size_t, KW>{});
  else f(rows, cols);
}

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, bool Max> struct pool_kernel {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], KH, SH, 1, Pad, 0),
                                     static_spatial(SX::extents[2], KW, SW, 1, Pad, 1), SX::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  pool_geometry g{};
  /// One window at a time, one vector of channels at a time. A NaN never wins, as in TensorFlow.
  void run(T* out, const expr::strided_view<T, 4>& x) const {
    using V = compute_t<T>;
    const std::size_t row = g.w * g.c, c = g.c;
    backend::cpu::parallel_for(g.n * g.oh, 1, 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t r = b; r < e; ++r) {
        const std::size_t n = r / g.oh, oy = r % g.oh;
        const T* xs = x.data + n * g.h * row;
        T* o = out + r * g.ow * c;
        for (std::size_t ox = 0; ox < g.ow; ++ox, o += c) {
          std::size_t y0, y1, x0, x1;
          g.window(oy, ox, y0, y1, x0, x1);
          g.prefetch_window(xs, y0, y1, x0);
          const V scale = Max ? V(1) : V(1) / V((y1 - y0) * (x1 - x0));  // the valid elements only, as TensorFlow
          const T* window = xs + (y0 * g.w + x0) * c;
          on_window<KH, KW>(y1 - y0, x1 - x0, [&](auto rows, auto cols) {
            each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
              using B = decltype(load(x.data));
              B acc(Max ? -std::numeric_limits<V>::infinity() : V(0));
              for (std::size_t i = 0; i < rows; ++i)
                for (std::size_t j = 0; j < cols; ++j) {
                  const B v = load(window + i * row + j * c + c0);
                  if constexpr (Max) acc = max_of(v, acc);
                  else acc = acc + v;
                }
              store(o + c0, Max ? acc : acc * B(scale));
            });
          });
        }
      }
    });
  }
};

/// Runs f(n, oy, rows) over every output row, images split among threads, for gradients that
/// add into their input's rows: rows[y] is the accumulator of input row y of image n, zero when
/// first touched (just before the windows that add to it, so that it is in cache), and final
/// once no later window reaches it; rows no window touches are written zero, so `out` is
/// written once and never read. The accumulators are out's own rows, except where `out` is
/// too large for the cache or a 16-bit storage type: then a ring of kh rows in the compute type
/// holds them, each copied out (streamed past the cache when large) as it becomes final.
template <class T, class F> void each_output_row_accumulating(const pool_geometry& g, T* out, F&& f) {
  namespace cpu = backend::cpu;
  using V = compute_t<T>;
  const std::size_t row = g.w * g.c;
  const bool stream = g.n * g.h * row * sizeof(T) >= cpu::cache_bytes;
  const bool in_place = std::is_same_v<T, V> && !stream;
  cpu::parallel_for(g.n, 1, 1, [&](std::size_t b, std::size_t e) {
    ctflow::detail::buffer<V> ring(in_place ? 0 : g.kh * row, false);
    std::vector<V*> rows(g.h);
    if (!in_place)
      for (std::size_t y = 0; y < g.h; ++y) rows[y] = ring.data() + (y % g.kh) * row;
    for (std::size_t n = b; n < e; ++n) {
      T* image = out + n * g.h * row;
      if constexpr (std::is_same_v<T, V>)
        if (in_place)
          for (std::size_t y = 0; y < g.h; ++y) rows[y] = image + y * row;
      std::size_t written = 0, started = 0;  // rows [written, started) are being accumulated
      const auto write_to = [&](std::size_t y) {
        for (; written < y; ++written) {
          if (written >= started) cpu::zero_out(image + written * row, row, stream);
          else if (!in_place) cpu::copy_out(image + written * row, rows[written], row, stream);
        }
        started = std::max(started, written);
      };
      for (std::size_t oy = 0; oy < g.oh; ++oy) {
        const std::ptrdiff_t ys = std::ptrdiff_t(oy * g.sh) - std::ptrdiff_t(g.pt);
        const auto clip = [&](std::ptrdiff_t y) { return std::size_t(std::clamp<std::ptrdiff_t>(y, 0, std::ptrdiff_t(g.h))); };
        write_to(clip(ys));
        for (const std::size_t y1 = clip(ys + std::ptrdiff_t(g.kh)); started < y1; ++started) std::fill_n(rows[started], row, V(0));
        f(n, oy, rows.data());
      }
      write_to(g.h);
    }
    cpu::stream_fence();
  });
}

/// MaxPoolGrad: each g goes to the first element of its window (row-major order, as
/// TensorFlow's CPU kernel) equal to the window's maximum y. Branch-free per channel: g is
/// handed to the first match and is zero after it, a one-instruction dependency per element.
template <class T, class SX, std::size_t KH, std::size_t KW> struct max_pool_grad_kernel {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& y, const expr::strided_view<T, 4>& dy) const {
    using V = compute_t<T>;
    const std::size_t row = g.w * g.c, c = g.c;
    each_output_row_accumulating(g, out, [&](std::size_t n, std::size_t oy, V* const* rows) {
      const T* xs = x.data + n * g.h * row;
      const std::size_t at = (n * g.oh + oy) * g.ow * c;
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        g.prefetch_window(xs, y0, y1, x0);
        const T* window = xs + (y0 * g.w + x0) * c;
        V* const* acc_rows = rows + y0;
        const std::size_t first = x0 * c;
        on_window<KH, KW>(y1 - y0, x1 - x0, [&](auto nrows, auto ncols) {
          each_channel_vector<T>(c, [&](std::size_t c0, auto load, auto store) {
            using B = decltype(load(x.data));
            // Locals, not captures: the stores below may alias whatever the closures refer to.
            const std::size_t step = c, pitch = row;
            const T* in = window + c0;
            V* acc[KH];
            for (std::size_t i = 0; i < nrows; ++i) acc[i] = acc_rows[i] + first + c0;
            const B top = load(y.data + at + ox * c + c0), zero(0);
            B left = load(dy.data + at + ox * c + c0);  // g where no match came yet, else 0
            for (std::size_t i = 0; i < nrows; ++i)
              for (std::size_t j = 0; j < ncols; ++j) {
                const auto eq = load(in + i * pitch + j * step) == top;
                store(acc[i] + j * step, load(acc[i] + j * step) + select(eq, left, zero));
                left = select(eq, zero, left);
              }
          });
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
    each_output_row_accumulating(g, out, [&](std::size_t n, std::size_t oy, V* const* rows) {
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        std::size_t y0, y1, x0, x1;
        g.window(oy, ox, y0, y1, x0, x1);
        const T* d = dy.data + ((n * g.oh + oy) * g.ow + ox) * g.c;
        const V scale = V(1) / V((y1 - y0) * (x1 - x0));
        for (std::size_t yy = y0; yy < y1; ++yy)
          for (std::size_t xx = x0; xx < x1; ++xx) {
            V* o = rows[yy] + xx * g.c;
            for (std::size_t c = 0; c < g.c; ++c) o[c] += V(d[c]) * scale;
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
