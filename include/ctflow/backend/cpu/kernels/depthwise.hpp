#pragma once
// CPU kernels of depthwise convolutions: direct loops over each output pixel's taps (every channel
// of a pixel is one contiguous run), the filter gradient summed over a fixed number of chunks.

#include <algorithm>

#include <ctflow/backend/cpu/conv.hpp>
#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
#include <ctflow/ops/nn/depthwise.hpp>

namespace ctflow::backend::cpu {

/// out[k * m + j] += in[k] * w[k * m + j] over c input channels (m == 1: a plain product).
template <class T> inline void depthwise_fma(T* out, const T* in, const T* w, std::size_t c, std::size_t m) {
  if (m == 1) {
    for (std::size_t k = 0; k < c; ++k) out[k] += in[k] * w[k];
    return;
  }
  for (std::size_t k = 0; k < c; ++k)
    for (std::size_t j = 0; j < m; ++j) out[k * m + j] += in[k] * w[k * m + j];
}

template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::depthwise_op<T, SX, SF, P>> : nn::detail::depthwise_op<T, SX, SF, P> {
  using op = nn::detail::depthwise_op<T, SX, SF, P>;
  using op::g;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& f) const {
    const std::size_t m = g.c ? g.o / g.c : 0;
    parallel_for(g.rows(), grain_for(g.kh * g.kw * g.o), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b; p < e; ++p) {
        T* o = out + p * g.o;
        std::fill_n(o, g.o, T(0));
        conv::each_tap(g, p, [&](std::size_t tap, std::size_t pixel) { depthwise_fma(o, x.data + pixel * g.c, f.data + tap * g.o, g.c, m); });
      }
    });
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::depthwise_backprop_input_op<T, SX, SF, P>> : nn::detail::depthwise_backprop_input_op<T, SX, SF, P> {
  using op = nn::detail::depthwise_backprop_input_op<T, SX, SF, P>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& dy, const expr::strided_view<T, 4>& f) const {
    const std::size_t m = g.c ? g.o / g.c : 0, per_image = g.oh * g.ow;
    std::fill_n(out, product(out_dims), T(0));
    parallel_for(g.n, grain_for(per_image * g.kh * g.kw * g.o), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t p = b * per_image; p < e * per_image; ++p) {
        const T* d = dy.data + p * g.o;
        conv::each_tap(g, p, [&](std::size_t tap, std::size_t pixel) {
          T* dx = out + pixel * g.c;
          const T* w = f.data + tap * g.o;
          if (m == 1) {
            for (std::size_t k = 0; k < g.c; ++k) dx[k] += d[k] * w[k];
            return;
          }
          for (std::size_t k = 0; k < g.c; ++k) {
            T s = 0;
            for (std::size_t j = 0; j < m; ++j) s += d[k * m + j] * w[k * m + j];
            dx[k] += s;
          }
        });
      }
    });
  }
};

template <class T, class SX, class SF, nn::detail::conv_options P> struct kernel<nn::detail::depthwise_backprop_filter_op<T, SX, SF, P>> : nn::detail::depthwise_backprop_filter_op<T, SX, SF, P> {
  using op = nn::detail::depthwise_backprop_filter_op<T, SX, SF, P>;
  using op::g, op::out_dims;
  void run(T* out, const expr::strided_view<T, 4>& x, const expr::strided_view<T, 4>& dy) const {
    const std::size_t m = g.c ? g.o / g.c : 0, per_image = g.oh * g.ow, size = g.kh * g.kw * g.o;
    const std::size_t chunks = std::clamp<std::size_t>(g.n, 1, 16);
    reduce::sum_in_chunk_order(chunks, size, out, [&](std::size_t i, T* acc) {
      std::fill_n(acc, size, T(0));
      for (std::size_t p = g.n * i / chunks * per_image; p < g.n * (i + 1) / chunks * per_image; ++p)
        conv::each_tap(g, p, [&](std::size_t tap, std::size_t pixel) { depthwise_fma(acc + tap * g.o, x.data + pixel * g.c, dy.data + p * g.o, g.c, m); });
    });
  }
};

}  // namespace ctflow::backend::cpu
