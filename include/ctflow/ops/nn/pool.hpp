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

#include <ctflow/ops/reduction.hpp>
#include <ctflow/ops/nn/conv.hpp>

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

/// What max pooling saves for its gradient: each output's position in its window, a byte where
/// every position fits (255 for none), else in the compute type (-1 for none).
template <class T, std::size_t KH, std::size_t KW> struct max_pool_saved {
  using saved_type = std::conditional_t<(KH * KW < 255), std::uint8_t, compute_t<T>>;
};
struct nothing_saved {};

template <class T, class SX, std::size_t KH, std::size_t KW, std::size_t SH, std::size_t SW, padding Pad, bool Max>
struct pool_op : std::conditional_t<Max, max_pool_saved<T, KH, KW>, nothing_saved> {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], KH, SH, 1, Pad, 0),
                                     static_spatial(SX::extents[2], KW, SW, 1, Pad, 1), SX::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  pool_geometry g{};
  std::size_t saved_size() const requires Max { return product(out_dims); }
};

/// MaxPoolGrad: each g goes to the first element of its window (row-major order, as
/// TensorFlow's CPU kernel) equal to the window's maximum y. Branch-free per channel: g is
/// handed to the first match and is zero after it, a one-instruction dependency per element.
/// The windows of an output row are taken one input row at a time, in order, so that the input
/// and its accumulator stream through the cache; `left` carries each window's unassigned g from
/// one of its rows to the next.
template <class T, class SX, std::size_t KH, std::size_t KW> struct max_pool_grad_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
};

/// MaxPoolGradWithArgmax: each g added to the element of its window at the position the forward
/// pass saved (nowhere where it saved none), one window at a time: dy and the positions are read
/// once, in order, and the accumulators of the window's rows are in cache.
template <class T, class SX, std::size_t KH, std::size_t KW> struct max_pool_argmax_grad_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
  using positions = typename max_pool_saved<T, KH, KW>::saved_type;
};

/// AvgPoolGrad: each g spread evenly over the valid elements of its window.
template <class T, class SX> struct avg_pool_grad_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  pool_geometry g{};
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
      pool_op<T, SX, KH, KW, SH, SW, Pad, Max> k;
      k.g = make_pool_geometry(d, KH, KW, SH, SW, Pad);
      k.out_dims = {k.g.n, k.g.oh, k.g.ow, k.g.c};
      return expr::make_computed(k, std::forward<X>(input));
    } else {
      return ctflow::detail::failed_check{};
    }
  } else {
    return ctflow::detail::failed_check{};
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
