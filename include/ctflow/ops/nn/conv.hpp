#pragma once
/// @brief tf.nn.conv2d over NHWC input and HWIO filters, with strides, dilations and SAME /
/// VALID / explicit padding (TensorFlow's asymmetric SAME: the extra row or column goes to the
/// bottom and right), NCHW input too; tf.nn.conv1d and tf.nn.conv2d_transpose on the same kernels.
/// The forward pass and both backward passes (TensorFlow's Conv2DBackpropInput and
/// Conv2DBackpropFilter) are ops of their own, so every device implements them and gradients of
/// gradients work.
///
///     Tensor<float, Shape<64, 28, 28, 1>> x;  Tensor<float, Shape<3, 3, 1, 32>> f;
///     auto y = nn::conv2d<nn::VALID>(x, f);                         // [64, 26, 26, 32]
///     auto z = nn::conv2d<nn::SAME, 2>(x, f);                       // strides 2: [64, 14, 14, 32]
///     auto e = nn::conv2d<nn::explicit_padding(1, 1, 2, 2)>(x, f);  // [64, 28, 30, 32]
///     auto t = nn::conv2d_transpose<nn::SAME, 2>(z, f);             // [64, 28, 28, 1]

#include <algorithm>
#include <cstring>

#include <ctflow/expr/computed.hpp>
#include <ctflow/ops/nn/layout.hpp>

namespace ctflow::nn {

/// @brief Padding of convolutions and pooling: TensorFlow's "SAME" and "VALID", or explicit
/// rows and columns of zeros before and after the image (padding="EXPLICIT").
struct padding {
  enum class kind { valid, same, explicit_pads };
  kind type = kind::valid;
  std::size_t top = 0, bottom = 0, left = 0, right = 0;
  constexpr bool operator==(const padding&) const = default;
};
inline constexpr padding VALID{padding::kind::valid};
inline constexpr padding SAME{padding::kind::same};
/// @brief TensorFlow's explicit_paddings [[0, 0], [top, bottom], [left, right], [0, 0]].
constexpr padding explicit_padding(std::size_t top, std::size_t bottom, std::size_t left, std::size_t right) {
  return {padding::kind::explicit_pads, top, bottom, left, right};
}

namespace detail {

/// Output extent and leading padding of one spatial axis (TensorFlow's rule); Axis 0 is the
/// height (top, bottom), 1 the width (left, right).
struct axis_geometry {
  std::size_t out = 0, pad_before = 0;
};
constexpr axis_geometry spatial(std::size_t in, std::size_t k, std::size_t stride, std::size_t dilation, padding p, int axis) {
  const std::size_t window = (k - 1) * dilation + 1;
  if (p.type == padding::kind::same) {
    const std::size_t out = (in + stride - 1) / stride;
    const std::size_t needed = (out - 1) * stride + window;
    return {out, needed > in ? (needed - in) / 2 : 0};
  }
  const std::size_t before = axis == 0 ? p.top : p.left, padded = in + before + (axis == 0 ? p.bottom : p.right);
  return {padded >= window ? (padded - window) / stride + 1 : 0, before};
}
constexpr std::size_t static_spatial(std::size_t in, std::size_t k, std::size_t stride, std::size_t dilation, padding p, int axis) {
  return in == dyn || k == dyn ? dyn : spatial(in, k, stride, dilation, p, axis).out;
}
/// Whether a window of k taps, dilated, fits the padded input (SAME always does; unknown
/// extents are checked at run time).
constexpr bool window_fits(std::size_t in, std::size_t k, std::size_t dilation, padding p, int axis) {
  if (p.type == padding::kind::same || in == dyn || k == dyn) return true;
  return (k - 1) * dilation + 1 <= in + (axis == 0 ? p.top + p.bottom : p.left + p.right);
}

/// Everything about one convolution's index arithmetic, at run time: input [n, h, w, c], filter
/// taps kh x kw, o outputs, strides, dilations, output extents and leading padding.
struct conv_geometry {
  std::size_t n, h, w, c, kh, kw, o, sh, sw, dh, dw, oh, ow, pt, pl;
  std::size_t rows() const { return n * oh * ow; }  // patch matrix rows: one per output pixel
  std::size_t depth() const { return kh * kw * c; }  // its columns: one per filter tap and channel
};
inline conv_geometry make_geometry(const dims_t<4>& x, const dims_t<4>& f, std::size_t sh, std::size_t sw, std::size_t dh, std::size_t dw,
                                   padding p) {
  const auto gh = spatial(x[1], f[0], sh, dh, p, 0), gw = spatial(x[2], f[1], sw, dw, p, 1);
  return {x[0], x[1], x[2], x[3], f[0], f[1], f[3], sh, sw, dh, dw, gh.out, gw.out, gh.pad_before, gw.pad_before};
}

struct conv_options {
  std::size_t sh, sw, dh, dw;
  padding pad;
};

template <class T, class SX, class SF, conv_options P> struct conv2d_op {
  static constexpr dims_t<4> extents{SX::extents[0], static_spatial(SX::extents[1], SF::extents[0], P.sh, P.dh, P.pad, 0),
                                     static_spatial(SX::extents[2], SF::extents[1], P.sw, P.dw, P.pad, 1), SF::extents[3]};
  using value_type = T;
  using shape_type = shape_of<extents>;
  dims_t<4> out_dims{};
  conv_geometry g{};
};

/// Conv2DBackpropInput: the patch adjoint dy x f^T, added back into the input's shape.
template <class T, class SX, class SF, conv_options P> struct conv2d_backprop_input_op {
  using value_type = T;
  using shape_type = SX;
  dims_t<4> out_dims{};
  conv_geometry g{};
};

/// Conv2DBackpropFilter: patches^T x dy, [depth, rows] x [rows, O] = the HWIO filter's shape.
template <class T, class SX, class SF, conv_options P> struct conv2d_backprop_filter_op {
  using value_type = T;
  using shape_type = SF;
  dims_t<4> out_dims{};
  conv_geometry g{};
};


/// The node of conv2d (Depthwise false: filters [kh, kw, c, o]) or depthwise_conv2d (filters
/// [kh, kw, c, m], c * m outputs) over NHWC input, after the checks they share: ranks, one
/// float dtype, input channels against the filters' third axis, the window against the padded
/// input. Each failure is a compile error naming the op, or a shape_error for dyn extents.
template <template <class, class, class, conv_options> class Kernel, ctflow::detail::fixed_string Name, bool Depthwise, padding Pad,
          std::size_t SH, std::size_t SW, std::size_t DH, std::size_t DW, class X, class F>
auto conv_node(X&& input, F&& filters) {
  using T = value_t<X>;
  using SX = shape_t<X>;
  using SF = shape_t<F>;
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  static_assert(SH > 0 && SW > 0 && DH > 0 && DW > 0, "ctflow::nn: convolution strides and dilations must be positive");
  constexpr auto shapes = concat(shape_string_v<SX>, fixed_string(" x "), shape_string_v<SF>);
  constexpr bool ranks = SX::rank == 4 && SF::rank == 4;
  CTFLOW_STATIC_CHECK(ranks, concat(Name, fixed_string(Depthwise ? ": input must be [n,h,w,c] and filters [kh,kw,c,m]: "
                                                                 : ": input must be [n,h,w,c] and filters [kh,kw,c,o]: "),
                                    shapes));
  constexpr bool dtypes = std::is_same_v<T, value_t<F>> && (std::is_same_v<T, float> || std::is_same_v<T, double>);
  CTFLOW_STATIC_CHECK(dtypes, concat(Name, fixed_string(": input and filters must both be float32 or both float64")));
  if constexpr (ranks && dtypes) {
    constexpr auto cx = SX::extents[3], cf = SF::extents[2];
    constexpr bool channels_ok = cx == dyn || cf == dyn || cx == cf;
    CTFLOW_STATIC_CHECK(channels_ok, concat(Name, fixed_string(": input channels differ from the filter channels: "), shapes));
    constexpr bool window_ok = window_fits(SX::extents[1], SF::extents[0], DH, Pad, 0) && window_fits(SX::extents[2], SF::extents[1], DW, Pad, 1);
    CTFLOW_STATIC_CHECK(window_ok, concat(Name, fixed_string(": the window is larger than the input with its padding: "), shapes));
    if constexpr (channels_ok && window_ok) {
      const auto dx = input.dims();
      const auto df = filters.dims();
      if (dx[3] != df[2]) throw_shape_error(Name.s, "input channels differ from the filter channels", dx, df);
      if (!window_fits(dx[1], df[0], DH, Pad, 0) || !window_fits(dx[2], df[1], DW, Pad, 1))
        throw_shape_error(Name.s, "the window is larger than the input with its padding", dx, df);
      constexpr conv_options P{SH, SW, DH, DW, Pad};
      Kernel<T, SX, SF, P> k;
      k.g = make_geometry(dx, df, SH, SW, DH, DW, Pad);
      if constexpr (Depthwise) k.g.o = df[2] * df[3];
      k.out_dims = {k.g.n, k.g.oh, k.g.ow, k.g.o};
      return expr::make_computed(k, std::forward<X>(input), std::forward<F>(filters));
    } else {
      return ctflow::detail::failed_check{};
    }
  } else {
    return ctflow::detail::failed_check{};
  }
}
}  // namespace detail

/// @brief tf.nn.conv2d(input, filters, strides, padding, data_format, dilations) for NHWC input
/// [n, h, w, c] and HWIO filters [kh, kw, c, o]: `conv2d<padding, stride_h, stride_w,
/// dilation_h, dilation_w>(x, f)`; strides and dilations default to 1. Float32 and float64.
template <padding Pad, std::size_t SH = 1, std::size_t SW = SH, std::size_t DH = 1, std::size_t DW = DH, Expression X, Expression F,
          bool ChannelsFirst = false>
auto conv2d(X&& input, F&& filters, data_format<ChannelsFirst> = {}) {
  // NCHW: input [n, c, h, w], result [n, o, oh, ow]; the filters stay HWIO, as in TensorFlow.
  if constexpr (ChannelsFirst)
    return nhwc_to_nchw(conv2d<Pad, SH, SW, DH, DW>(nchw_to_nhwc(std::forward<X>(input)), std::forward<F>(filters)));
  else
    return detail::conv_node<detail::conv2d_op, "ctflow::nn::conv2d", false, Pad, SH, SW, DH, DW>(std::forward<X>(input), std::forward<F>(filters));
}

/// @brief tf.nn.conv1d(input, filters, stride, padding, data_format, dilations) for NWC input
/// [n, w, c] and filters [kw, c, o]: conv2d over a height of one, as TensorFlow computes it.
/// Explicit padding uses its left and right members. NCW input is [n, c, w].
template <padding Pad, std::size_t S = 1, std::size_t D = 1, Expression X, Expression F, bool ChannelsFirst = false>
auto conv1d(X&& input, F&& filters, data_format<ChannelsFirst> = {}) {
  static_assert(rank_v<X> == 3 && rank_v<F> == 3, "ctflow::nn::conv1d: input must be [n,w,c] and filters [kw,c,o]");
  if constexpr (ChannelsFirst) {
    return transpose<0, 2, 1>(conv1d<Pad, S, D>(transpose<0, 2, 1>(std::forward<X>(input)), std::forward<F>(filters)));
  } else {
    constexpr padding P2 = Pad.type == padding::kind::explicit_pads ? explicit_padding(0, 0, Pad.left, Pad.right) : Pad;
    return squeeze<1>(conv2d<P2, 1, S, 1, D>(expand_dims<1>(std::forward<X>(input)), expand_dims<0>(std::forward<F>(filters))));
  }
}

/// @brief The spatial output size of conv2d_transpose: `output_size<H, W>` names it, as
/// tf.nn.conv2d_transpose's output_shape does; without it, Keras's Conv2DTranspose rule applies
/// (SAME: in * stride; VALID: in * stride + max(window - stride, 0); explicit: (in - 1) * stride
/// + window - padding).
template <std::size_t H, std::size_t W> struct output_size_t {};
template <std::size_t H, std::size_t W> inline constexpr output_size_t<H, W> output_size{};

namespace detail {
constexpr std::size_t transposed_extent(std::size_t in, std::size_t k, std::size_t stride, std::size_t dilation, padding p, int axis) {
  if (in == dyn || k == dyn) return dyn;
  const std::size_t window = (k - 1) * dilation + 1;
  if (p.type == padding::kind::same) return in * stride;
  if (p.type == padding::kind::valid) return in * stride + (window > stride ? window - stride : 0);
  const std::size_t pads = axis == 0 ? p.top + p.bottom : p.left + p.right, full = (in - 1) * stride + window;
  return full > pads ? full - pads : 0;
}
}  // namespace detail

/// @brief tf.nn.conv2d_transpose(input, filters, output_shape, strides, padding, dilations): the
/// adjoint of conv2d, for NHWC input [n, h, w, ic] and filters [kh, kw, oc, ic]; the result is
/// [n, H, W, oc], where conv2d of an [n, H, W, oc] image with these filters has input's shape.
/// It is TensorFlow's Conv2DBackpropInput kernel; its gradients are conv2d and
/// Conv2DBackpropFilter.
template <padding Pad, std::size_t SH = 1, std::size_t SW = SH, std::size_t DH = 1, std::size_t DW = DH, Expression X, Expression F,
          std::size_t OH = 0, std::size_t OW = 0>
auto conv2d_transpose(X&& input, F&& filters, output_size_t<OH, OW> = {}) {
  using T = value_t<X>;
  using SX = shape_t<X>;
  using SF = shape_t<F>;
  using ctflow::detail::concat;
  using ctflow::detail::fixed_string;
  static_assert(SH > 0 && SW > 0 && DH > 0 && DW > 0, "ctflow::nn::conv2d_transpose: strides and dilations must be positive");
  constexpr bool ranks = SX::rank == 4 && SF::rank == 4;
  CTFLOW_STATIC_CHECK(ranks, concat(fixed_string("ctflow::nn::conv2d_transpose: input must be [n,h,w,ic] and filters [kh,kw,oc,ic]: "),
                                    shape_string_v<SX>, fixed_string(" x "), shape_string_v<SF>));
  CTFLOW_STATIC_CHECK((std::is_same_v<T, value_t<F>> && (std::is_same_v<T, float> || std::is_same_v<T, double>)),
                      fixed_string("ctflow::nn::conv2d_transpose: input and filters must both be float32 or both float64"));
  if constexpr (ranks && std::is_same_v<T, value_t<F>> && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
    constexpr auto cx = SX::extents[3], cf = SF::extents[3];
    constexpr bool channels_ok = cx == dyn || cf == dyn || cx == cf;
    CTFLOW_STATIC_CHECK(channels_ok, concat(fixed_string("ctflow::nn::conv2d_transpose: input channels differ from the last axis of the filters: "),
                                            shape_string_v<SX>, fixed_string(" x "), shape_string_v<SF>));
    constexpr std::size_t H = OH ? OH : detail::transposed_extent(SX::extents[1], SF::extents[0], SH, DH, Pad, 0);
    constexpr std::size_t W = OW ? OW : detail::transposed_extent(SX::extents[2], SF::extents[1], SW, DW, Pad, 1);
    // The image this is the input adjoint of: [n, H, W, oc].
    using SY = Shape<extent_t(SX::extents[0]), extent_t(H), extent_t(W), extent_t(SF::extents[2])>;
    constexpr bool fits = H == dyn || SX::extents[1] == dyn || SF::extents[0] == dyn ||
                          detail::static_spatial(H, SF::extents[0], SH, DH, Pad, 0) == SX::extents[1];
    constexpr bool fits_w = W == dyn || SX::extents[2] == dyn || SF::extents[1] == dyn ||
                            detail::static_spatial(W, SF::extents[1], SW, DW, Pad, 1) == SX::extents[2];
    CTFLOW_STATIC_CHECK(fits && fits_w, concat(fixed_string("ctflow::nn::conv2d_transpose: conv2d of the output size would not give the input's: "),
                                               shape_string_v<SX>, fixed_string(" x "), shape_string_v<SY>));
    if constexpr (channels_ok && fits && fits_w) {
      const auto dx = input.dims();
      const auto df = filters.dims();
      if (dx[3] != df[3]) throw_shape_error("ctflow::nn::conv2d_transpose", "input channels differ from the last axis of the filters", dx, df);
      const dims_t<4> dy{dx[0], OH ? OH : detail::transposed_extent(dx[1], df[0], SH, DH, Pad, 0),
                         OW ? OW : detail::transposed_extent(dx[2], df[1], SW, DW, Pad, 1), df[2]};
      constexpr detail::conv_options P{SH, SW, DH, DW, Pad};
      detail::conv2d_backprop_input_op<T, SY, SF, P> k;
      k.g = detail::make_geometry(dy, df, SH, SW, DH, DW, Pad);
      if (k.g.oh != dx[1] || k.g.ow != dx[2])
        throw_shape_error("ctflow::nn::conv2d_transpose", "conv2d of the output size would not give the input's", dx, dy);
      k.out_dims = dy;
      return expr::make_computed(k, std::forward<X>(input), std::forward<F>(filters));
    } else {
      return ctflow::detail::failed_check{};
    }
  } else {
    return ctflow::detail::failed_check{};
  }
}

}  // namespace ctflow::nn
