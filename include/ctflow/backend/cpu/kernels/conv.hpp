#pragma once
// CPU kernels of conv2d and its two backward passes (Conv2DBackpropInput, Conv2DBackpropFilter).
// Each pass picks its scheme per shape: Winograd's F(2x2, 3x3) or F(4x4, 3x3) (winograd.hpp) for
// 3x3 filters with unit strides over a vector of channels or more, the direct kernels of conv.hpp where the
// height stride is 1 (the input gradient: both strides), im2col + GEMM otherwise.

#include <algorithm>

#include <ctflow/backend/cpu/conv.hpp>
#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/gemm.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/winograd.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/ops/nn/conv.hpp>

namespace ctflow::backend::cpu {

/// The CPU's schemes for a pass of a convolution, chosen per shape by each kernel's `scheme()`:
/// Winograd's minimal filtering (winograd.hpp), the direct kernels of conv.hpp (which need a height
/// stride of 1, known at compile time: `direct_ok`), or a patch matrix and GEMM.
enum class conv_scheme { winograd, direct, im2col };

template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::conv2d_op<T, SX, SF, P>> : nn::detail::conv2d_op<T, SX, SF, P> {
  using op = nn::detail::conv2d_op<T, SX, SF, P>;
  using op::g;
  static constexpr bool direct_ok = P.sh == 1;

  conv_scheme scheme() const {
    if (winograd::suits<T>(g)) return conv_scheme::winograd;
    return direct_ok ? conv_scheme::direct : conv_scheme::im2col;
  }

  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    switch (scheme()) {
      case conv_scheme::winograd: return by_winograd(out, x, f);
      case conv_scheme::direct: if constexpr (direct_ok) return by_direct(out, x, f); else break;
      case conv_scheme::im2col: break;
    }
    by_im2col(out, x, f);
  }

  void by_winograd(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    const T* w = f.data;  // HWIO: the layout the transform reads
    const winograd::scheme s = winograd::scheme_for(g);
    if (winograd::keeps_filters(g))
      if (const T* u = winograd::kept_filters<T>::local().get(s, g.c, g.o, w)) return winograd::forward(s, g, x.data, u, out);
    const auto u = winograd::transform_filters<T>(s, g.c, g.o, w);
    winograd::forward(s, g, x.data, u.data(), out);
  }
  void by_direct(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    // HWIO filters are the [depth, O] matrix the direct kernel multiplies.
    const auto panels = conv::pack_panels<T, conv::direct_blocking<T>::NR>(g.depth(), g.o, [&](std::size_t d, std::size_t j) { return f.data[d * g.o + j]; });
    conv::forward_direct(g, x.data, panels.data(), out);
  }
  void by_im2col(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    const auto p = conv::patches(g, x.data);
    // [rows, depth] x [depth, O] (HWIO is that matrix) = [rows, O], which is NHWC.
    gemm::gemm(g.rows(), g.o, g.depth(), p.data(), std::ptrdiff_t(g.depth()), 1, f.data, std::ptrdiff_t(g.o), 1, out, std::ptrdiff_t(g.o));
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::conv2d_backprop_input_op<T, SX, SF, P>> : nn::detail::conv2d_backprop_input_op<T, SX, SF, P> {
  using op = nn::detail::conv2d_backprop_input_op<T, SX, SF, P>;
  using op::g, op::out_dims;
  static constexpr bool unit_strides = P.sh == 1 && P.sw == 1;

  /// With unit strides the input gradient is a forward convolution of dy, padded by the rest of
  /// the window, with the filters flipped and their channel axes swapped: this one.
  conv::geometry transposed() const {
    return {g.n, g.oh, g.ow, g.o, g.kh, g.kw, g.c, 1, 1, g.dh, g.dw, g.h, g.w, (g.kh - 1) * g.dh - g.pt, (g.kw - 1) * g.dw - g.pl};
  }
  /// Whether the transposed convolution exists: unit strides, and padding within the window.
  bool transposable() const { return unit_strides && g.pt <= (g.kh - 1) * g.dh && g.pl <= (g.kw - 1) * g.dw; }

  conv_scheme scheme() const {
    if (winograd::suits<T>(g)) return conv_scheme::winograd;
    // The direct kernel costs more than the patch matrix where the padding is a large part of the
    // image (small images; it does the multiply-adds of the padding too) or the input has a few
    // channels, but more than one (they are its outputs: lanes of a vector left idle).
    if (transposable() && (g.c == 1 || g.c >= lanes<T>) && double(g.h * conv::padded_image(transposed()).per_row) <= 1.25 * double(g.oh * g.ow))
      return conv_scheme::direct;
    return conv_scheme::im2col;
  }

  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    switch (scheme()) {
      case conv_scheme::winograd: return by_winograd(out, dy, f);
      case conv_scheme::direct: return by_direct(out, dy, f);
      case conv_scheme::im2col: return by_im2col(out, dy, f);
    }
  }

  /// Tap (ky, kx), input d, output ci of the transposed convolution's filters.
  T flipped(const expr::strided_view<T, 4>& f, std::size_t ky, std::size_t kx, std::size_t d, std::size_t ci) const {
    return f.data[(((g.kh - 1 - ky) * g.kw + (g.kw - 1 - kx)) * g.c + ci) * g.o + d];
  }
  void by_winograd(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    // Winograd's forward over the transposed convolution has a tile per m x m pixels of dx, its
    // adjoint one per m x m of dy, with the same work per tile but added into overlapping tiles
    // of dx: the adjoint where dy's tiles take fewer products (VALID), the forward where as few
    // (SAME).
    const conv::geometry t = transposed();
    const winograd::scheme st = winograd::scheme_for(t), sg = winograd::scheme_for(g);
    if (transposable() && winograd::products(t, st) <= winograd::products(g, sg)) {
      const auto u = winograd::transform_filters<T>(st, t.c, t.o, [&](std::size_t ky, std::size_t kx, std::size_t d, std::size_t ci) { return flipped(f, ky, kx, d, ci); });
      winograd::forward(st, t, dy.data, u.data(), out);
      return;
    }
    const auto ut = winograd::transform_filters<T>(sg, g.o, g.c, [&](std::size_t ky, std::size_t kx, std::size_t d, std::size_t ci) {
      return f.data[((ky * 3 + kx) * g.c + ci) * g.o + d];  // channel axes swapped: [a^2][o][c]
    });
    winograd::input_gradient(sg, g, dy.data, ut.data(), out);
  }
  void by_direct(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    const conv::geometry t = transposed();
    const auto panels = conv::pack_panels<T, conv::direct_blocking<T>::NR>(t.depth(), g.c, [&](std::size_t d, std::size_t ci) {
      const std::size_t tap = d / g.o;
      return flipped(f, tap / g.kw, tap % g.kw, d % g.o, ci);
    });
    conv::forward_direct(t, dy.data, panels.data(), out);
  }
  void by_im2col(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    ctflow::detail::buffer<T> cols(g.rows() * g.depth(), false);
    gemm::gemm(g.rows(), g.depth(), g.o, dy.data, std::ptrdiff_t(g.o), 1, f.data, 1, std::ptrdiff_t(g.o), cols.data(), std::ptrdiff_t(g.depth()));
    std::fill_n(out, product(out_dims), T(0));
    conv::col2im(g, cols.data(), out);
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::conv2d_backprop_filter_op<T, SX, SF, P>> : nn::detail::conv2d_backprop_filter_op<T, SX, SF, P> {
  using op = nn::detail::conv2d_backprop_filter_op<T, SX, SF, P>;
  using op::g;
  static constexpr bool direct_ok = P.sh == 1;

  conv_scheme scheme() const {
    if (winograd::suits<T>(g)) return conv_scheme::winograd;
    return direct_ok ? conv_scheme::direct : conv_scheme::im2col;
  }

  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& dy) const {
    switch (scheme()) {
      case conv_scheme::winograd: return winograd::filter(g, x.data, dy.data, out);
      case conv_scheme::direct: if constexpr (direct_ok) return conv::filter_direct(g, x.data, dy.data, out); else break;
      case conv_scheme::im2col: break;
    }
    by_im2col(out, x, dy);
  }

  void by_im2col(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& dy) const {
    const auto p = conv::patches(g, x.data);
    // The product is small ([depth, O]) and its inner dimension long (every output pixel): the
    // rows are cut into a fixed number of chunks (fixed by the shape alone, so the result does
    // not depend on the threads), each chunk's product is computed on one thread, and the
    // partial products are added in chunk order.
    const std::size_t rows = g.rows(), chunks = std::clamp<std::size_t>(rows / 2048, 1, 16);
    reduce::sum_in_chunk_order(chunks, g.depth() * g.o, out, [&](std::size_t i, T* part) {
      const std::size_t r0 = rows * i / chunks, r1 = rows * (i + 1) / chunks;
      gemm::packed(g.depth(), g.o, r1 - r0, p.data() + r0 * g.depth(), 1, std::ptrdiff_t(g.depth()), dy.data + r0 * g.o, std::ptrdiff_t(g.o), 1,
                   part, std::ptrdiff_t(g.o), false);
    });
  }
};

}  // namespace ctflow::backend::cpu
