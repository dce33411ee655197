#pragma once
/// @file
/// @brief The int8 layers of a quantized network (keras::quantize writes them), TensorFlow
/// Lite's scheme: an activation is int8 with a scale and a zero point per tensor (real = (q -
/// zero) * scale), a weight int8 with a scale per output channel and no zero point, a bias int32
/// at the scale of input times weight, and each output requantized by an integer multiplier and
/// shift per channel (m * 2^(shift - 31), rounded as TFLite rounds), so that every target computes
/// the same integers. Quantize and Dequantize are the float network's ends.
///
///     embedded::Quantize<0.0039, -128>,                      // float -> int8
///     embedded::QuantizedDense<128, -128, -128, -128, 127, weights::k, weights::b, weights::m, weights::s>,
///     embedded::Dequantize<0.12, 3>                           // int8 -> float
///
/// The kernels are plain loops (every device; the same functions keras::quantized_model::predict
/// runs on the host), in namespace int8_detail.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <ctflow/core/device.hpp>
#include <ctflow/embedded/layers/common.hpp>
#include <ctflow/embedded/network.hpp>

namespace ctflow::embedded {

namespace int8_detail {

inline constexpr std::int32_t int32_max = 2147483647, int32_min = -2147483647 - 1;

/// x * m * 2^(shift - 31), rounded to nearest, ties up (at the doubling multiply and at the
/// shift): TensorFlow Lite's MultiplyByQuantizedMultiplier.
constexpr std::int32_t requantize(std::int32_t x, std::int32_t m, std::int32_t shift) {
  const std::int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
  std::int64_t v = std::int64_t(x) * (std::int64_t(1) << left);
  v = v > int32_max ? int32_max : v < int32_min ? int32_min : v;
  const std::int32_t a = std::int32_t(v);
  std::int32_t high = int32_max;
  if (!(a == int32_min && m == int32_min)) {
    const std::int64_t ab = std::int64_t(a) * m;
    const std::int64_t nudge = ab >= 0 ? (std::int64_t(1) << 30) : (1 - (std::int64_t(1) << 30));
    high = std::int32_t((ab + nudge) / (std::int64_t(1) << 31));
  }
  if (right == 0) return high;
  const std::int32_t mask = std::int32_t((std::int64_t(1) << right) - 1), remainder = high & mask;
  const std::int32_t threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return (high >> right) + (remainder > threshold ? 1 : 0);
}

constexpr std::int8_t saturate(std::int32_t v, std::int32_t lo, std::int32_t hi) { return std::int8_t(v < lo ? lo : v > hi ? hi : v); }

/// q = round(x / scale) + zero, saturated (inv_scale: 1 / scale, as a float): rounded half away
/// from zero (std::lround's rule) by truncating and adding the truncation of twice the remainder
/// (-1, 0 or 1), which is exact; a NaN becomes -128. Two loops over runs of 64, each of which
/// vectorises (GCC gives up on the one loop doing both).
inline void quantize(const float* __restrict x, std::int8_t* __restrict q, std::size_t n, float inv_scale, std::int32_t zero) {
  constexpr std::size_t run = 64;
  float r[run];
  for (std::size_t i0 = 0; i0 < n; i0 += run) {
    const std::size_t m = n - i0 < run ? n - i0 : run;
    for (std::size_t i = 0; i < m; ++i) {
      float v = x[i0 + i] * inv_scale;
      v = v > -1e6f ? v : -1e6f;  // (false for a NaN)
      r[i] = v < 1e6f ? v : 1e6f;
    }
    for (std::size_t i = 0; i < m; ++i) {
      std::int32_t t = std::int32_t(r[i]);  // toward zero
      const float rest = r[i] - float(t);
      t += std::int32_t(rest + rest);
      const std::int32_t v = t + zero;
      q[i0 + i] = std::int8_t(v < -128 ? -128 : v > 127 ? 127 : v);
    }
  }
}
/// x = (q - zero) * scale.
inline void dequantize(const std::int8_t* q, float* x, std::size_t n, float scale, std::int32_t zero) {
  for (std::size_t i = 0; i < n; ++i) x[i] = float(std::int32_t(q[i]) - zero) * scale;
}

/// An output's requantization: per channel multiplier and shift, the output's zero point, and
/// the clamp of its fused activation (relu: [zero, 127]).
struct requant {
  const std::int32_t* multiplier;
  const std::int32_t* shift;
  std::int32_t in_zero, out_zero, lo, hi;
  std::int8_t operator()(std::int32_t acc, std::size_t channel) const {
    return saturate(requantize(acc, multiplier[channel], shift[channel]) + out_zero, lo, hi);
  }
};

/// y[r, o] = requant(bias[o] + sum_i (x[r, i] - in_zero) * k[i, o]) for rows r, the sums in acc
/// (out int32s of scratch).
inline void dense(const std::int8_t* x, std::int8_t* y, std::size_t rows, std::size_t in, std::size_t out, const std::int8_t* k, const std::int32_t* bias,
                  const requant& q, std::int32_t* acc) {
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t o = 0; o < out; ++o) acc[o] = bias[o];
    for (std::size_t i = 0; i < in; ++i) {
      const std::int32_t v = std::int32_t(x[r * in + i]) - q.in_zero;
      // (__restrict: an int8 is a char, which may alias anything; the sums stay in registers.)
      const std::int8_t* __restrict row = k + i * out;
      std::int32_t* __restrict sums = acc;
      for (std::size_t o = 0; o < out; ++o) sums[o] += v * std::int32_t(row[o]);
    }
    for (std::size_t o = 0; o < out; ++o) y[r * out + o] = q(acc[o], o);
  }
}

/// A 2-D window over NHWC input: its extents, the output's, and the padding before the first row
/// and column (TensorFlow's SAME puts the odd one after).
struct geometry {
  std::size_t batch, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw, top, left;
};
/// The geometry of window (kh, kw, sh, sw, dh, dw), same or valid, over [batch, h, w, c]
/// (TensorFlow's rule: nn::detail::spatial).
constexpr geometry window_over(std::size_t batch, std::size_t h, std::size_t w, std::size_t c, std::size_t kh, std::size_t kw, std::size_t sh, std::size_t sw,
                               std::size_t dh, std::size_t dw, bool same) {
  const nn::padding p = same ? nn::SAME : nn::VALID;
  const auto gh = nn::detail::spatial(h, kh, sh, dh, p, 0), gw = nn::detail::spatial(w, kw, sw, dw, p, 1);
  return {batch, h, w, c, gh.out, gw.out, kh, kw, sh, sw, dh, dw, gh.pad_before, gw.pad_before};
}

/// Calls f(y, x, channel offset of the input row) for each in-bounds cell of output (b, oy, ox)'s
/// window: padded cells are skipped (they hold the real value 0, the input's zero point).
template <class F> void each_cell(const geometry& g, std::size_t b, std::size_t oy, std::size_t ox, F&& f) {
  for (std::size_t ky = 0; ky < g.kh; ++ky) {
    const std::ptrdiff_t iy = std::ptrdiff_t(oy * g.sh + ky * g.dh) - std::ptrdiff_t(g.top);
    if (iy < 0 || iy >= std::ptrdiff_t(g.h)) continue;
    for (std::size_t kx = 0; kx < g.kw; ++kx) {
      const std::ptrdiff_t ix = std::ptrdiff_t(ox * g.sw + kx * g.dw) - std::ptrdiff_t(g.left);
      if (ix < 0 || ix >= std::ptrdiff_t(g.w)) continue;
      f(ky, kx, ((b * g.h + std::size_t(iy)) * g.w + std::size_t(ix)) * g.c);
    }
  }
}

/// A convolution: kernel [kh, kw, c, out] (Conv2D) or [kh, kw, c, multiplier] (depthwise: out =
/// c * multiplier, output channel ci * multiplier + j), int32 bias [out]; the sums in acc (out
/// int32s of scratch).
inline void conv2d(const std::int8_t* x, std::int8_t* y, const geometry& g, std::size_t out, bool depthwise, const std::int8_t* k, const std::int32_t* bias,
                   const requant& q, std::int32_t* acc) {
  const std::size_t multiplier = depthwise ? out / g.c : 0;
  for (std::size_t b = 0; b < g.batch; ++b)
    for (std::size_t oy = 0; oy < g.oh; ++oy)
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        for (std::size_t o = 0; o < out; ++o) acc[o] = bias[o];
        each_cell(g, b, oy, ox, [&](std::size_t ky, std::size_t kx, std::size_t row) {
          const std::int8_t* cell = k + (ky * g.kw + kx) * g.c * (depthwise ? multiplier : out);
          std::int32_t* __restrict sums = acc;  // (an int8 is a char, which may alias anything)
          for (std::size_t c = 0; c < g.c; ++c) {
            const std::int32_t v = std::int32_t(x[row + c]) - q.in_zero;
            if (depthwise) {
              for (std::size_t j = 0; j < multiplier; ++j) sums[c * multiplier + j] += v * std::int32_t(cell[c * multiplier + j]);
            } else {
              const std::int8_t* __restrict w = cell + c * out;
              for (std::size_t o = 0; o < out; ++o) sums[o] += v * std::int32_t(w[o]);
            }
          }
        });
        std::int8_t* to = y + ((b * g.oh + oy) * g.ow + ox) * out;
        for (std::size_t o = 0; o < out; ++o) to[o] = q(acc[o], o);
      }
}

/// Max or average pooling over the in-bounds cells of each window (the output's scale and zero
/// point are the input's); an average rounds half away from zero. A pixel's channels go through
/// in runs of 64, each cell's run one vectorisable loop (into a local array, which nothing
/// aliases).
inline void pool2d(const std::int8_t* x, std::int8_t* y, const geometry& g, bool max) {
  constexpr std::size_t run = 64;
  const auto channels = [&](std::size_t b, std::size_t oy, std::size_t ox, std::size_t c0, std::size_t n) {
    std::int8_t* out = y + ((b * g.oh + oy) * g.ow + ox) * g.c + c0;
    if (max) {  // (in int8 itself: the widest vectors)
      std::int8_t most[run];
      for (std::size_t i = 0; i < n; ++i) most[i] = -128;
      each_cell(g, b, oy, ox, [&](std::size_t, std::size_t, std::size_t row) {
        const std::int8_t* from = x + row + c0;
        for (std::size_t i = 0; i < n; ++i) most[i] = from[i] > most[i] ? from[i] : most[i];
      });
      for (std::size_t i = 0; i < n; ++i) out[i] = most[i];
      return;
    }
    std::int32_t acc[run] = {}, count = 0;
    each_cell(g, b, oy, ox, [&](std::size_t, std::size_t, std::size_t row) {
      const std::int8_t* from = x + row + c0;
      for (std::size_t i = 0; i < n; ++i) acc[i] += from[i];
      ++count;
    });
    for (std::size_t i = 0; i < n; ++i) {
      std::int32_t v = acc[i];
      if (count) v = v >= 0 ? (v + count / 2) / count : (v - count / 2) / count;
      out[i] = saturate(v, -128, 127);
    }
  };
  for (std::size_t b = 0; b < g.batch; ++b)
    for (std::size_t oy = 0; oy < g.oh; ++oy)
      for (std::size_t ox = 0; ox < g.ow; ++ox) {
        for (std::size_t c0 = 0; c0 < g.c; c0 += run) channels(b, oy, ox, c0, g.c - c0 < run ? g.c - c0 : run);
      }
}

/// y = table[x + 128]: an element-wise function of the input's reals, as the output's int8.
inline void lookup(const std::int8_t* x, std::int8_t* y, std::size_t n, const std::int8_t* table) {
  for (std::size_t i = 0; i < n; ++i) y[i] = table[std::int32_t(x[i]) + 128];
}

/// [batch, h, w, c] into [batch, h + top + bottom, w + left + right, c], the new cells `zero`.
inline void zero_pad(const std::int8_t* x, std::int8_t* y, std::size_t batch, std::size_t h, std::size_t w, std::size_t c, std::size_t top, std::size_t bottom,
                     std::size_t left, std::size_t right, std::int8_t zero) {
  const std::size_t oh = h + top + bottom, ow = w + left + right;
  for (std::size_t b = 0; b < batch; ++b)
    for (std::size_t oy = 0; oy < oh; ++oy)
      for (std::size_t ox = 0; ox < ow; ++ox)
        for (std::size_t ch = 0; ch < c; ++ch) {
          const bool inside = oy >= top && oy < top + h && ox >= left && ox < left + w;
          y[((b * oh + oy) * ow + ox) * c + ch] = inside ? x[((b * h + oy - top) * w + ox - left) * c + ch] : zero;
        }
}

/// The kernel of a QuantizedDense, or of a QuantizedConv2D that is not depthwise, on device D:
/// weights k [in, out] (a convolution's in: kh * kw * channels, kh given), bias and
/// requantization q, kept
/// in the form D's loops read (converted once: the runner of keras::quantized_model builds one
/// per layer). Reference's are the loops above; a backend defines its own (the cpu device's:
/// <ctflow/backend/cpu/kernels/int8.hpp>). The results are integers, the same on every device.
template <class D> class linear_kernel;

template <> class linear_kernel<reference> {
 public:
  linear_kernel(const std::int8_t* k, std::size_t in, std::size_t out, const std::int32_t* bias, const requant& q, std::size_t /*kh*/ = 1)
      : k_(k), in_(in), out_(out), bias_(bias), q_(q), acc_(out) {}
  /// y [rows, out] from x [rows, in].
  void dense(const std::int8_t* x, std::int8_t* y, std::size_t rows) { int8_detail::dense(x, y, rows, in_, out_, k_, bias_, q_, acc_.data()); }
  /// y [batch, oh, ow, out] from x [batch, h, w, c], over window g.
  void conv(const std::int8_t* x, std::int8_t* y, const geometry& g) { conv2d(x, y, g, out_, false, k_, bias_, q_, acc_.data()); }
  /// Whether conv_max_pool may run (the cpu device's needs a requantization that never decreases).
  bool pools() const { return true; }
  /// conv, then a 2x2 max pool of stride 2 without padding: y [batch, oh / 2, ow / 2, out].
  void conv_max_pool(const std::int8_t* x, std::int8_t* y, const geometry& g) {
    conv_out_.resize(g.batch * g.oh * g.ow * out_);
    conv(x, conv_out_.data(), g);
    pool2d(conv_out_.data(), y, window_over(g.batch, g.oh, g.ow, out_, 2, 2, 2, 2, 1, 1, false), true);
  }

 private:
  const std::int8_t* k_;
  std::size_t in_, out_;
  const std::int32_t* bias_;
  requant q_;
  std::vector<std::int32_t> acc_;
  std::vector<std::int8_t> conv_out_;  // conv_max_pool's convolution
};

}  // namespace int8_detail

namespace detail {
/// The geometry of window W over NHWC input In.
template <class In, window W> constexpr int8_detail::geometry geometry_of() {
  static_assert(In::rank == 4, "ctflow::embedded: a quantized 2-D window's input must be [batch, height, width, channels]");
  return int8_detail::window_over(In::extents[0], In::extents[1], In::extents[2], In::extents[3], W.kh, W.kw, W.sh, W.sw, W.dh, W.dw,
                           W.padding.type == nn::padding::kind::same);
}
}  // namespace detail

/// @brief float to int8: round(x / Scale) + Zero, saturated.
template <double Scale, int Zero> struct Quantize {
  template <class T, ShapeType In> struct built {
    static_assert(std::is_same_v<T, float>, "ctflow::embedded::Quantize: its input is float");
    using value_type = std::int8_t;
    using output_shape = In;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, In, D> y) {
      int8_detail::quantize(x.data(), y.data(), In::static_size, float(1.0 / Scale), Zero);
    }
  };
};

/// @brief int8 to float: (q - Zero) * Scale.
template <double Scale, int Zero> struct Dequantize {
  template <class T, ShapeType In> struct built {
    static_assert(std::is_same_v<T, std::int8_t>, "ctflow::embedded::Dequantize: its input is int8");
    using value_type = float;
    using output_shape = In;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<float, In, D> y) {
      int8_detail::dequantize(x.data(), y.data(), In::static_size, float(Scale), Zero);
    }
  };
};

namespace detail {
template <const auto& Multiplier, const auto& Shift, int InZero, int OutZero, int Lo, int Hi> constexpr int8_detail::requant requant_of() {
  return {Multiplier, Shift, InZero, OutZero, Lo, Hi};
}
template <class T> inline constexpr bool is_int8 = std::is_same_v<T, std::int8_t>;
}  // namespace detail

/// @brief keras.layers.Dense quantized: int8 kernel [features, Units], int32 bias, per-channel
/// requantization, an output clamp [Lo, Hi] (its fused activation).
template <std::size_t Units, int InZero, int OutZero, int Lo, int Hi, const auto& Kernel, const auto& Bias, const auto& Multiplier, const auto& Shift>
struct QuantizedDense {
  template <class T, ShapeType In> struct built {
    static_assert(detail::is_int8<T>, "ctflow::embedded::QuantizedDense: its input is int8 (a Quantize before it)");
    static constexpr std::size_t features = In::extents[std::size_t(In::rank - 1)];
    static_assert(detail::length<Kernel> == features * Units && detail::length<Bias> == Units && detail::length<Multiplier> == Units &&
                      detail::length<Shift> == Units,
                  "ctflow::embedded::QuantizedDense: its arrays are not [features, Units] and [Units]");
    using value_type = std::int8_t;
    using output_shape = shape_of<detail::with_last(In::extents, Units)>;
    static constexpr std::size_t params = detail::length<Kernel> + Units;
    static constexpr placement place = placement::buffer;
    static constexpr std::size_t scratch_bytes = Units * sizeof(std::int32_t);  // the sums of a row
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, output_shape, D> y, std::byte* scratch) {
      int8_detail::dense(x.data(), y.data(), In::static_size / features, features, Units, Kernel, Bias, detail::requant_of<Multiplier, Shift, InZero, OutZero, Lo, Hi>(),
                  reinterpret_cast<std::int32_t*>(scratch));
    }
  };
};

/// @brief keras.layers.Conv2D (Depthwise false: Out filters) or DepthwiseConv2D (Depthwise
/// true: Out the depth multiplier) quantized, over window W.
template <bool Depthwise, std::size_t Out, window W, int InZero, int OutZero, int Lo, int Hi, const auto& Kernel, const auto& Bias, const auto& Multiplier,
          const auto& Shift>
struct QuantizedConv2D {
  template <class T, ShapeType In> struct built {
    static_assert(detail::is_int8<T>, "ctflow::embedded::QuantizedConv2D: its input is int8 (a Quantize before it)");
    static constexpr int8_detail::geometry g = detail::geometry_of<In, W>();
    static constexpr std::size_t channels = Depthwise ? g.c * Out : Out;
    static_assert(detail::length<Kernel> == W.kh * W.kw * g.c * Out && detail::length<Bias> == channels && detail::length<Multiplier> == channels &&
                      detail::length<Shift> == channels,
                  "ctflow::embedded::QuantizedConv2D: its arrays are not [kh, kw, in, out] and [channels]");
    using value_type = std::int8_t;
    using output_shape = Shape<extent_t(g.batch), extent_t(g.oh), extent_t(g.ow), extent_t(channels)>;
    static constexpr std::size_t params = detail::length<Kernel> + channels;
    static constexpr placement place = placement::buffer;
    static constexpr std::size_t scratch_bytes = channels * sizeof(std::int32_t);  // the sums of a pixel
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, output_shape, D> y, std::byte* scratch) {
      int8_detail::conv2d(x.data(), y.data(), g, channels, Depthwise, Kernel, Bias, detail::requant_of<Multiplier, Shift, InZero, OutZero, Lo, Hi>(),
                   reinterpret_cast<std::int32_t*>(scratch));
    }
  };
};

/// @brief A 2-D max (Max true) or average pooling of int8 values, over window W (the output's
/// scale and zero point are the input's).
template <bool Max, window W> struct QuantizedPooling2D {
  template <class T, ShapeType In> struct built {
    static_assert(detail::is_int8<T>, "ctflow::embedded::QuantizedPooling2D: its input is int8 (a Quantize before it)");
    static constexpr int8_detail::geometry g = detail::geometry_of<In, W>();
    using value_type = std::int8_t;
    using output_shape = Shape<extent_t(g.batch), extent_t(g.oh), extent_t(g.ow), extent_t(g.c)>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, output_shape, D> y) {
      int8_detail::pool2d(x.data(), y.data(), g, Max);
    }
  };
};

/// @brief keras.layers.GlobalAveragePooling2D of int8 values: [batch, channels].
struct QuantizedGlobalAveragePooling2D {
  template <class T, ShapeType In> struct built {
    static_assert(detail::is_int8<T> && In::rank == 4, "ctflow::embedded::QuantizedGlobalAveragePooling2D: its input is int8 [batch, height, width, channels]");
    static constexpr int8_detail::geometry g =
        int8_detail::window_over(In::extents[0], In::extents[1], In::extents[2], In::extents[3], In::extents[1], In::extents[2], 1, 1, 1, 1, false);
    using value_type = std::int8_t;
    using output_shape = Shape<extent_t(g.batch), extent_t(g.c)>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, output_shape, D> y) {
      int8_detail::pool2d(x.data(), y.data(), g, false);
    }
  };
};

/// @brief An element-wise function of int8 values as a table of its 256 results (Table[q + 128]).
template <const auto& Table> struct Lookup {
  template <class T, ShapeType In> struct built {
    static_assert(detail::is_int8<T> && detail::length<Table> == 256, "ctflow::embedded::Lookup: int8 input and a table of 256 int8 results");
    using value_type = std::int8_t;
    using output_shape = In;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::in_place;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, In, D> y) { int8_detail::lookup(x.data(), y.data(), In::static_size, Table); }
  };
};

/// @brief keras.layers.ZeroPadding2D of int8 values: the new cells hold Zero, the zero point.
template <std::size_t Top, std::size_t Bottom, std::size_t Left, std::size_t Right, int Zero> struct QuantizedZeroPadding2D {
  template <class T, ShapeType In> struct built {
    static_assert(detail::is_int8<T> && In::rank == 4, "ctflow::embedded::QuantizedZeroPadding2D: its input is int8 [batch, height, width, channels]");
    using value_type = std::int8_t;
    using output_shape = Shape<extent_t(In::extents[0]), extent_t(In::extents[1] + Top + Bottom), extent_t(In::extents[2] + Left + Right),
                               extent_t(In::extents[3])>;
    static constexpr std::size_t params = 0;
    static constexpr placement place = placement::buffer;
    template <class D> static void run(const TensorView<const T, In, D>& x, TensorView<std::int8_t, output_shape, D> y) {
      int8_detail::zero_pad(x.data(), y.data(), In::extents[0], In::extents[1], In::extents[2], In::extents[3], Top, Bottom, Left, Right, std::int8_t(Zero));
    }
  };
};

}  // namespace ctflow::embedded
