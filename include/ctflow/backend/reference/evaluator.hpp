#pragma once
// The reference device's evaluators: evaluator<Node, reference> for every node type, and its
// executor. Evaluation is a plain serial loop over the destination's elements, outermost index
// first; each node reads its value at a destination position, operands broadcast by reading
// index 0 along their axes of extent 1. A boundary computes its result once, through the
// reference kernel of its op (kernels/<family>.hpp), over contiguous operands.

#include <cstddef>
#include <tuple>
#include <type_traits>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/core/concepts.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/detail/float_environment.hpp>
#include <ctflow/detail/observe.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/elementwise.hpp>
#include <ctflow/expr/strided.hpp>

namespace ctflow::backend::reference {

template <class E> using evaluator = ctflow::evaluator<std::remove_cvref_t<E>, ctflow::reference>;
template <class T> using buffer = typename ctflow::reference::template buffer<T>;

/// A position in the destination: its indices, outermost first.
struct position {
  const std::size_t* index;
  std::size_t rank;
};

/// The element of memory v at destination position p, v's axes aligned with p's last ones and
/// its axes of extent 1 broadcast.
template <class T, std::size_t R> compute_t<T> read(const expr::strided_view<T, R>& v, position p) {
  std::ptrdiff_t offset = 0;
  for (std::size_t k = 0; k < R; ++k)
    if (v.dims[k] != 1) offset += std::ptrdiff_t(p.index[p.rank - R + k]) * v.strides[k];
  return compute_t<T>(v.data[offset]);
}

/// Calls f(p, i) for each position of extents d, i counting them in row-major order.
template <std::size_t R, class F> void each_position(const dims_t<R>& d, F&& f) {
  const std::size_t n = product(d);
  std::size_t index[R > 0 ? R : 1] = {};
  for (std::size_t i = 0; i < n; ++i) {
    f(position{index, R}, i);
    for (std::size_t k = R; k-- > 0;) {
      if (++index[k] < d[k]) break;
      index[k] = 0;
    }
  }
}

/// The value of e in contiguous row-major memory: its own memory when it has such, a copy
/// otherwise.
template <class E> struct contiguous {
  using T = value_t<E>;
  static constexpr std::size_t R = std::size_t(rank_v<E>);
  evaluator<E> ev;
  buffer<T> copy;
  expr::strided_view<T, R> v;

  explicit contiguous(const std::remove_cvref_t<E>& e) : ev(e) {
    if constexpr (requires { ev.view(); }) {
      v = ev.view();
      if (v.contiguous()) return;
    }
    const auto d = e.dims();
    copy = buffer<T>(product(d), false);
    each_position(d, [&](position p, std::size_t i) { copy.data()[i] = T(ev.at(p)); });
    v = {copy.data(), d, row_major_strides(d)};
  }
};

}  // namespace ctflow::backend::reference

namespace ctflow {

template <class E> requires is_leaf_v<E> struct evaluator<E, reference> {
  using T = value_t<E>;
  expr::strided_view<T, std::size_t(rank_v<E>)> v;
  explicit evaluator(const E& e) : v{e.data(), e.dims(), e.strides()} {}
  auto view() const { return v; }
  compute_t<T> at(backend::reference::position p) const { return backend::reference::read(v, p); }
};

template <class T> struct evaluator<expr::Scalar<T>, reference> {
  compute_t<T> value;
  explicit evaluator(const expr::Scalar<T>& s) : value(s.value) {}
  compute_t<T> at(backend::reference::position) const { return value; }
};

template <class F, class E> struct evaluator<expr::Unary<F, E>, reference> {
  const F& f;
  backend::reference::evaluator<E> e;
  explicit evaluator(const expr::Unary<F, E>& n) : f(n.f), e(n.e) {}
  auto at(backend::reference::position p) const { return f(e.at(p)); }
};

template <class F, class L, class R> struct evaluator<expr::Binary<F, L, R>, reference> {
  const F& f;
  backend::reference::evaluator<L> l;
  backend::reference::evaluator<R> r;
  explicit evaluator(const expr::Binary<F, L, R>& n) : f(n.f), l(n.l), r(n.r) { (void)n.dims(); }
  auto at(backend::reference::position p) const { return f(l.at(p), r.at(p)); }
};

template <class C, class A, class B> struct evaluator<expr::Select<C, A, B>, reference> {
  backend::reference::evaluator<C> c;
  backend::reference::evaluator<A> a;
  backend::reference::evaluator<B> b;
  explicit evaluator(const expr::Select<C, A, B>& n) : c(n.c), a(n.a), b(n.b) { (void)n.dims(); }
  auto at(backend::reference::position p) const { return c.at(p) ? a.at(p) : b.at(p); }
};

/// A view reads its operand's memory through the view's mapping; an operand without memory of
/// its own, or one the mapping cannot take as it is, is made contiguous first.
template <class E, class S, class M> struct evaluator<expr::Strided<E, S, M>, reference> {
  using T = value_t<E>;
  backend::reference::contiguous<E> src;
  expr::strided_view<T, std::size_t(S::rank)> v;
  explicit evaluator(const expr::Strided<E, S, M>& n) : src(n.e) { n.m.map(src.v, v); }
  auto view() const { return v; }
  compute_t<T> at(backend::reference::position p) const { return backend::reference::read(v, p); }
};

template <class K, class... Ops> struct evaluator<expr::Computed<K, Ops...>, reference> {
  using T = typename K::value_type;
  static constexpr std::size_t R = std::size_t(K::shape_type::rank);
  backend::reference::buffer<T> out;
  expr::strided_view<T, R> v;

  /// Runs the op's kernel into dest (the destination of an assignment) or into memory of its
  /// own; with `saved`, the form that also leaves the op's by-product for its gradient.
  explicit evaluator(const expr::Computed<K, Ops...>& n, T* dest = nullptr) : evaluator(n, dest, nullptr) {}
  template <class U> evaluator(const expr::Computed<K, Ops...>& n, T* dest, U saved) {
    ctflow::detail::apply([&](const auto&... ops) { run(n, dest, saved, backend::reference::contiguous<decltype(ops)>(ops)...); }, n.ops);
  }
  auto view() const { return v; }
  compute_t<T> at(backend::reference::position p) const { return backend::reference::read(v, p); }

 private:
  template <class U, class... Src> void run(const expr::Computed<K, Ops...>& n, T* dest, U saved, const Src&... srcs) {
    const auto d = n.dims();
    if (!dest) {
      out = backend::reference::buffer<T>(product(d), false);
      dest = out.data();
    }
    const std::int64_t begin = detail::profile::on() ? detail::profile::now_ns() : 0;
    const backend::reference::kernel<K> kernel{n.k};
    if constexpr (std::is_same_v<U, std::nullptr_t>) kernel.run(dest, srcs.v...);
    else kernel.run(dest, saved, srcs.v...);
    if (detail::profile::on()) detail::observe::finish_op<expr::Computed<K>>(reference::name, begin, dest, d, srcs.v...);
    v = expr::strided_view<T, R>{dest, d, row_major_strides(d)};
  }
};

// Every evaluation runs in TensorFlow's floating-point environment, as the CPU's
// (detail/float_environment.hpp).
template <> struct executor<reference> {
  /// Evaluates e into the contiguous memory out of extents d (those of e).
  template <class T, std::size_t R, class E> static void assign(T* out, const dims_t<R>& d, const E& e) {
    const detail::kernel_float_environment environment;
    using N = std::remove_cvref_t<E>;
    if constexpr (expr::is_computed<N>::value) {
      backend::reference::evaluator<N> ev(e, out);
    } else {
      const std::int64_t begin = detail::profile::on() ? detail::profile::now_ns() : 0;
      backend::reference::evaluator<N> ev(e);
      backend::reference::each_position(d, [&](backend::reference::position p, std::size_t i) { out[i] = T(ev.at(p)); });
      if (detail::profile::on()) detail::observe::finish_fused(reference::name, begin, e, out, d);
    }
  }
  /// Runs n's kernel into out, leaving its by-product for the gradient in saved.
  template <class T, class U, class K, class... Ops> static void assign_saving(T* out, U* saved, const expr::Computed<K, Ops...>& n) {
    const detail::kernel_float_environment environment;
    backend::reference::evaluator<expr::Computed<K, Ops...>> ev(n, out, saved);
  }
};

}  // namespace ctflow
