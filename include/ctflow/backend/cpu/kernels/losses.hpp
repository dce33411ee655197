#pragma once
// CPU kernels of the sparse softmax cross-entropy and its two adjoints: one pass per row in
// vectors, e^x from simd.hpp, rows split among threads.

#include <algorithm>
#include <cmath>
#include <limits>

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/reduce.hpp>
#include <ctflow/backend/cpu/simd.hpp>
#include <ctflow/backend/cpu/thread_pool.hpp>
#include <ctflow/ops/nn/losses.hpp>

namespace ctflow::backend::cpu {

/// Checks every label against [0, classes) before any work.
template <class I> void check_labels(const I* labels, std::size_t rows, std::size_t classes) {
  for (std::size_t r = 0; r < rows; ++r)
    if (labels[r] < 0 || std::size_t(labels[r]) >= classes) nn::detail::label_out_of_range(static_cast<long long>(labels[r]), classes);
}

/// sum(exp(x - shift)) of n values; with Keep, e[i] = exp(x[i] - shift) as well (vector types).
template <bool Keep, class T> compute_t<T> row_exp_sum(const T* x, std::size_t n, compute_t<T> shift, std::type_identity_t<T>* e) {
  using V = compute_t<T>;
    if constexpr (simd_type_v<T>) {
    constexpr std::size_t W = lanes<T>;
    const auto bm = batch<T>(shift);
    auto bs = batch<T>(T(0));
    std::size_t i = 0;
    for (; i + W <= n; i += W) {
      const auto v = cpu::exp(batch<T>::load_unaligned(x + i) - bm);
      if constexpr (Keep) v.store_unaligned(e + i);
      bs += v;
    }
    // The tail in one vector: its missing lanes are -inf, whose exp is 0.
    if (i < n) {
      const auto v = cpu::exp(load_partial(x + i, n - i, -std::numeric_limits<T>::infinity()) - bm);
      if constexpr (Keep) store_partial(e + i, v, n - i);
      bs += v;
    }
    return xsimd::hadd(bs);
  } else {
    static_assert(!Keep);
    V s = 0;
    for (std::size_t i = 0; i < n; ++i) s += std::exp(V(x[i]) - shift);
    return s;
  }
}

/// log(sum(exp(x))) - x[label] of n values. One pass where exp(x - x[label]) sums without
/// overflow (the label's own term is 1, so the sum is at least 1; the loss is its log, with no
/// cancellation); otherwise (a logit above the label's by about 88 or more) shifted by the row's
/// maximum, the reductions' vectorised row where the dtype allows. Given p, it also leaves
/// softmax(x) = p * scale: for vector types p holds the pass's exps and scale is 1 / their sum
/// (no second pass over the row), for the others p is the softmax itself, from a second pass in
/// the compute type, and scale is 1.
template <class T> compute_t<T> row_xent(const T* x, std::size_t n, std::size_t label, T* p = nullptr, T* scale = nullptr) {
  using V = compute_t<T>;
    constexpr bool keep = simd_type_v<T>;
  auto exp_sum = [&](V shift) { return keep && p ? row_exp_sum<keep>(x, n, shift, p) : row_exp_sum<false>(x, n, shift, nullptr); };
  const V at = V(x[label]);
  V shift = at, s = exp_sum(at), loss;
  if (s < std::numeric_limits<V>::infinity()) {
    loss = std::log(s);
  } else {
    if constexpr (simd_type_v<T>) shift = reduce::row(ops::max_op<T>{}, x, n);
    else {
      shift = -std::numeric_limits<V>::infinity();
      for (std::size_t i = 0; i < n; ++i) shift = std::max(shift, V(x[i]));
    }
    s = exp_sum(shift);
    loss = shift + std::log(s) - at;
  }
  if (p) {
    const V inv = V(1) / s;
    if constexpr (keep) {
      *scale = T(inv);
    } else {
      for (std::size_t i = 0; i < n; ++i) p[i] = T(std::exp(V(x[i]) - shift) * inv);
      *scale = T(1);
    }
  }
  return loss;
}

/// f(r) for each of `rows` rows of n classes (a row reads its n logits and writes n values).
template <class F> void each_row(std::size_t rows, std::size_t n, F&& f) {
  parallel_for(rows, grain_for(2 * n), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t r = b; r < e; ++r) f(r);
  });
}

template <class T, class I, class SL, class SX> struct kernel<nn::detail::sparse_xent_op<T, I, SL, SX>> : nn::detail::sparse_xent_op<T, I, SL, SX> {
  using op = nn::detail::sparse_xent_op<T, I, SL, SX>;
  using op::RL, op::RX, op::out_dims, op::classes;
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits) const { run(out, nullptr, labels, logits); }
  void run(T* out, T* saved, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits) const {
    const std::size_t rows = product(out_dims), n = classes;
    check_labels(labels.data, rows, n);
    each_row(rows, n, [&](std::size_t r) {
      out[r] = T(row_xent(logits.data + r * n, n, std::size_t(labels.data[r]), saved ? saved + r * n : nullptr, saved ? saved + rows * n + r : nullptr));
    });
  }
};

template <class T, class I, class SL, class SX> struct kernel<nn::detail::sparse_xent_grad_op<T, I, SL, SX>> : nn::detail::sparse_xent_grad_op<T, I, SL, SX> {
  using op = nn::detail::sparse_xent_grad_op<T, I, SL, SX>;
  using op::RL, op::RX, op::out_dims;
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& logits, const expr::strided_view<T, RL>& loss,
           const expr::strided_view<T, RL>& g) const {
    using V = compute_t<T>;
        const std::size_t n = out_dims[RX - 1], rows = n ? product(out_dims) / n : 0;
    check_labels(labels.data, rows, n);
    each_row(rows, n, [&, n](std::size_t r) {
      const T* x = logits.data + r * n;
      T* o = out + r * n;
      const std::size_t label = std::size_t(labels.data[r]);
      const V at = V(x[label]), y = V(loss.data[r]), gr = V(g.data[r]);
      if constexpr (simd_type_v<T>) {
        constexpr std::size_t W = lanes<T>;
        using B = batch<T>;
        const B bat(at), by(y), bg(gr);
        std::size_t i = 0;
        for (; i + W <= n; i += W) (cpu::exp((B::load_unaligned(x + i) - bat) - by) * bg).store_unaligned(o + i);
        if (i < n) store_partial(o + i, cpu::exp((load_partial(x + i, n - i) - bat) - by) * bg, n - i);
      } else {
        for (std::size_t i = 0; i < n; ++i) o[i] = T(std::exp((V(x[i]) - at) - y) * gr);
      }
      o[label] = T(V(o[label]) - gr);
    });
  }
};

template <class T, class I, class SL, class SX> struct kernel<nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX>> : nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX> {
  using op = nn::detail::sparse_xent_saved_grad_op<T, I, SL, SX>;
  using op::RL, op::RX, op::out_dims;
  void run(T* out, const expr::strided_view<I, RL>& labels, const expr::strided_view<T, RX>& saved, const expr::strided_view<T, RL>& scale,
           const expr::strided_view<T, RL>& g) const {
    using V = compute_t<T>;
        const std::size_t n = out_dims[RX - 1], rows = n ? product(out_dims) / n : 0;
    each_row(rows, n, [&, n](std::size_t r) {
      const T* p = saved.data + r * n;
      T* o = out + r * n;
      const std::size_t cols = n, label = std::size_t(labels.data[r]);  // locals: the stores below may alias the captures
      const V gr = V(g.data[r]), f = V(scale.data[r]) * gr;
      std::size_t i = 0;
      if constexpr (simd_type_v<T>) {
        constexpr std::size_t W = lanes<T>;
        const batch<T> bf(f);
        for (; i + W <= cols; i += W) (batch<T>::load_unaligned(p + i) * bf).store_unaligned(o + i);
      }
      for (; i < cols; ++i) o[i] = T(V(p[i]) * f);
      o[label] = T(V(p[label]) * f - gr);
    });
  }
};

}  // namespace ctflow::backend::cpu
