#pragma once
// CPU evaluators, one per node type: evaluator<Node, cpu> (the Eigen split: node / evaluator /
// executor). An evaluator computes the boundaries below it once (materialised results it owns)
// and hands out cursors, small copyable readers the fused loop runs on. Addressable evaluators
// (leaves, views, computed results) also expose their memory as a strided_view. A boundary's
// result comes from its CPU kernel, kernel<Op> (kernels/<family>.hpp).

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ctflow/core/concepts.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/detail/observe.hpp>
#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/elementwise.hpp>
#include <ctflow/expr/strided.hpp>
#include <ctflow/backend/cpu/executor.hpp>

namespace ctflow::backend::cpu {

using expr::strided_view;

/// How the CPU computes op Op (an op descriptor of ops/): a specialisation per descriptor, in
/// kernels/<family>.hpp, that derives from Op, is built from it (`kernel<Op>{op}`) and has
/// `run(out, operands...)` (and, for an op that saves a by-product for its gradient,
/// `run(out, saved, operands...)`). Operands come contiguous unless it sets `strided_operands`.
template <class Op> struct kernel;

template <class E> using evaluator = ctflow::evaluator<std::remove_cvref_t<E>, ctflow::cpu>;

// ---- cursors --------------------------------------------------------------------------------

/// Reads strided memory at positions of the destination, broadcasting extents of 1.
template <class T> struct strided_cursor {
  using compute_type = compute_t<T>;
  static constexpr bool vectorizable = simd_type_v<T>;

  const T* data = nullptr;
  int rank = 0;
  std::array<std::size_t, max_rank> dims{};
  std::array<std::ptrdiff_t, max_rank> strides{};
  std::array<std::ptrdiff_t, max_rank> ostr{};
  std::array<std::ptrdiff_t, max_rank> step{};  // next_row(k)'s move
  int orank = 0;
  std::ptrdiff_t inner = 0;
  const T* row = nullptr;

  template <std::size_t R> explicit strided_cursor(const strided_view<T, R>& v) : data(v.data), rank(int(R)) {
    for (std::size_t i = 0; i < R; ++i) { dims[i] = v.dims[i]; strides[i] = v.strides[i]; }
  }
  bool full(const std::size_t* od, int r) const {
    if (r != rank) return false;
    std::ptrdiff_t acc = 1;
    for (int i = r; i-- > 0;) {
      if (dims[std::size_t(i)] != od[i] || (od[i] != 1 && strides[std::size_t(i)] != acc)) return false;
      acc *= std::ptrdiff_t(od[i]);
    }
    return true;
  }
  /// The step in memory along axis k of a destination of extents od (rank r): 0 where this
  /// operand is broadcast along it.
  std::ptrdiff_t stride_along(const std::size_t* od, int r, int k) const {
    const int a = k - (r - rank);
    return a < 0 || (dims[std::size_t(a)] == 1 && od[k] != 1) ? 0 : strides[std::size_t(a)];
  }
  void bind(const std::size_t* od, int r, bool flat) {
    row = data;
    if (flat) { inner = 1; return; }
    orank = r;
    for (int k = 0; k < r; ++k) ostr[std::size_t(k)] = stride_along(od, r, k);
    inner = r > 0 ? ostr[std::size_t(r - 1)] : 0;
    // Axis k advancing takes the axes after it (but the last) from their last index back to 0.
    std::ptrdiff_t back = 0;
    for (int k = r - 1; k-- > 0;) {
      step[std::size_t(k)] = ostr[std::size_t(k)] - back;
      back += std::ptrdiff_t(od[k] - 1) * ostr[std::size_t(k)];
    }
  }
  /// Reads the destination's rows (extents od, rank r) g at a time, as rows of g times as many
  /// elements (see execute()). An operand that changes along the row axis must do so in step
  /// with the last axis; one that does not change along it is a function of the last index only
  /// and is tiled g times into memory from tiles (false when they have no more); one broadcast
  /// along the last axis but not the row axis (a column) cannot be read so: false.
  template <class Tiles> bool merge_rows(const std::size_t* od, int r, std::size_t g, Tiles& tiles) {
    const int last = rank - 1, prev = rank - 2;
    const std::size_t n = od[r - 1];
    const std::ptrdiff_t s1 = stride_along(od, r, r - 1), s2 = stride_along(od, r, r - 2);
    if (s2 == 0 && s1 == 0) return true;  // constant across both axes
    if (s2 != 0 && s2 == std::ptrdiff_t(n) * s1) {  // rows in step with the last axis
      dims[std::size_t(prev)] /= g;
      dims[std::size_t(last)] *= g;
      strides[std::size_t(prev)] *= std::ptrdiff_t(g);
      return true;
    }
    if (s2 != 0 || s1 == 0) return false;
    for (int a = 0; a < last; ++a)
      if (dims[std::size_t(a)] != 1) return false;
    T* tile = tiles.template make<T>(g * n);
    if (!tile) return false;
    for (std::size_t q = 0, i = 0; q < g; ++q)
      for (std::size_t j = 0; j < n; ++j) tile[i++] = data[std::ptrdiff_t(j) * s1];
    data = tile;
    rank = 1;
    dims[0] = g * n;
    strides[0] = 1;
    return true;
  }
  void set_row(const std::size_t* idx) {
    std::ptrdiff_t off = 0;
    for (int k = 0; k + 1 < orank; ++k) off += std::ptrdiff_t(idx[k]) * ostr[std::size_t(k)];
    row = data + off;
  }
  void next_row(int k) { row += step[std::size_t(k)]; }
  compute_type coeff(std::size_t j) const { return compute_type(row[std::ptrdiff_t(j) * inner]); }
  /// Elements j .. j + n - 1 of the row in the first n lanes (n short of a vector: a row's
  /// tail); nothing past them is read. Always inlined: left to itself, GCC calls it out of line
  /// from the loops of larger expressions (sigmoid, exp), which then run at half their speed.
  inline __attribute__((always_inline)) batch<compute_type> packet(std::size_t j, std::size_t n = lanes<T>) const requires vectorizable {
    if (inner == 1) return n == lanes<T> ? batch<T>::load_unaligned(row + j) : load_partial(row + j, n);
    if (inner == 0) return batch<T>(*row);
    alignas(64) T tmp[lanes<T>] = {};
    for (std::size_t l = 0; l < n; ++l) tmp[l] = row[std::ptrdiff_t(j + l) * inner];
    return batch<T>::load_aligned(tmp);
  }
};

template <class T> struct scalar_cursor {
  using compute_type = T;
  static constexpr bool vectorizable = simd_type_v<T>;
  T value;
  bool full(const std::size_t*, int) const { return true; }
  void bind(const std::size_t*, int, bool) {}
  template <class Tiles> bool merge_rows(const std::size_t*, int, std::size_t, Tiles&) { return true; }
  void set_row(const std::size_t*) {}
  void next_row(int) {}
  T coeff(std::size_t) const { return value; }
  batch<T> packet(std::size_t, std::size_t = lanes<T>) const requires vectorizable { return batch<T>(value); }
};

template <class F, class C> struct unary_cursor {
  using in_type = typename C::compute_type;
  using compute_type = decltype(std::declval<const F&>()(std::declval<in_type>()));
  static constexpr bool vectorizable =
      C::vectorizable && std::is_same_v<compute_type, in_type> && F::template packet_ok<in_type>;
  F f;
  C c;
  bool full(const std::size_t* d, int r) const { return c.full(d, r); }
  void bind(const std::size_t* d, int r, bool flat) { c.bind(d, r, flat); }
  template <class Tiles> bool merge_rows(const std::size_t* d, int r, std::size_t g, Tiles& t) { return c.merge_rows(d, r, g, t); }
  void set_row(const std::size_t* idx) { c.set_row(idx); }
  void next_row(int k) { c.next_row(k); }
  compute_type coeff(std::size_t j) const { return f(c.coeff(j)); }
  batch<compute_type> packet(std::size_t j, std::size_t n = lanes<compute_type>) const requires vectorizable { return f(c.packet(j, n)); }
};

template <class F, class L, class R> struct binary_cursor {
  using in_type = typename L::compute_type;
  using compute_type = decltype(std::declval<const F&>()(std::declval<in_type>(), std::declval<in_type>()));
  static constexpr bool operands_vectorizable = L::vectorizable && R::vectorizable &&
      std::is_same_v<in_type, typename R::compute_type> && F::template packet_ok<in_type>;
  static constexpr bool vectorizable = operands_vectorizable && std::is_same_v<compute_type, in_type>;
  /// Comparisons give bool elements; their vector form is a mask for `where`.
  static constexpr bool maskable = operands_vectorizable && std::is_same_v<compute_type, bool>;
  F f;
  L l;
  R r;
  bool full(const std::size_t* d, int n) const { return l.full(d, n) && r.full(d, n); }
  void bind(const std::size_t* d, int n, bool flat) { l.bind(d, n, flat); r.bind(d, n, flat); }
  template <class Tiles> bool merge_rows(const std::size_t* d, int n, std::size_t g, Tiles& t) {
    return l.merge_rows(d, n, g, t) && r.merge_rows(d, n, g, t);
  }
  void set_row(const std::size_t* idx) { l.set_row(idx); r.set_row(idx); }
  void next_row(int k) { l.next_row(k); r.next_row(k); }
  compute_type coeff(std::size_t j) const { return f(l.coeff(j), r.coeff(j)); }
  batch<compute_type> packet(std::size_t j, std::size_t n = lanes<compute_type>) const requires vectorizable {
    return f(l.packet(j, n), r.packet(j, n));
  }
  auto mask(std::size_t j, std::size_t n = lanes<in_type>) const requires maskable { return f(l.packet(j, n), r.packet(j, n)); }
};

template <class C> concept maskable_cursor = requires { requires C::maskable; };
/// A condition whose vector form is a mask for lanes of V.
template <class C, class V> concept mask_for = maskable_cursor<C> &&
    std::is_same_v<decltype(std::declval<const C&>().mask(0)), batch_bool<V>>;

template <class C, class A, class B> struct select_cursor {
  using compute_type = typename A::compute_type;
  static constexpr bool vectorizable = A::vectorizable && B::vectorizable &&
      std::is_same_v<compute_type, typename B::compute_type> && mask_for<C, compute_type>;
  C c;
  A a;
  B b;
  bool full(const std::size_t* d, int n) const { return c.full(d, n) && a.full(d, n) && b.full(d, n); }
  void bind(const std::size_t* d, int n, bool flat) { c.bind(d, n, flat); a.bind(d, n, flat); b.bind(d, n, flat); }
  template <class Tiles> bool merge_rows(const std::size_t* d, int n, std::size_t g, Tiles& t) {
    return c.merge_rows(d, n, g, t) && a.merge_rows(d, n, g, t) && b.merge_rows(d, n, g, t);
  }
  void set_row(const std::size_t* idx) { c.set_row(idx); a.set_row(idx); b.set_row(idx); }
  void next_row(int k) { c.next_row(k); a.next_row(k); b.next_row(k); }
  compute_type coeff(std::size_t j) const { return c.coeff(j) ? a.coeff(j) : b.coeff(j); }
  batch<compute_type> packet(std::size_t j, std::size_t n = lanes<compute_type>) const requires vectorizable {
    return xsimd::select(c.mask(j, n), a.packet(j, n), b.packet(j, n));
  }
};

// ---- materialising --------------------------------------------------------------------------

template <class Ev> concept addressable = requires(const Ev& ev) { ev.view(); };

/// Memory holding the value of an expression: the operand's own memory when it has some (and it
/// is contiguous, if asked), a materialised copy otherwise.
template <class E, bool Contiguous> struct source {
  using N = std::remove_cvref_t<E>;
  using T = value_t<E>;
  static constexpr std::size_t R = std::size_t(rank_v<E>);
  evaluator<N> ev;
  detail::buffer<T> tmp;
  strided_view<T, R> v;

  explicit source(const N& e) : ev(e) {
    if constexpr (addressable<decltype(ev)>) {
      v = ev.view();
      if (!Contiguous || v.contiguous()) return;
    }
    const auto d = e.dims();
    tmp = detail::buffer<T>(product(d), false);
    execute(tmp.data(), d, ev.cursor());
    v = strided_view<T, R>{tmp.data(), d, row_major_strides(d)};
  }
};

}  // namespace ctflow::backend::cpu

namespace ctflow {

// ---- evaluators -----------------------------------------------------------------------------

template <class E> requires is_leaf_v<E> struct evaluator<E, cpu> {
  using T = value_t<E>;
  expr::strided_view<T, std::size_t(rank_v<E>)> v;
  explicit evaluator(const E& e) : v{e.data(), e.dims(), e.strides()} {}
  auto view() const { return v; }
  auto cursor() const { return backend::cpu::strided_cursor<T>(v); }
};

template <class T> struct evaluator<expr::Scalar<T>, cpu> {
  compute_t<T> value;
  explicit evaluator(const expr::Scalar<T>& s) : value(s.value) {}
  auto cursor() const { return backend::cpu::scalar_cursor<compute_t<T>>{value}; }
};

template <class F, class E> struct evaluator<expr::Unary<F, E>, cpu> {
  const F& f;
  backend::cpu::evaluator<E> e;
  explicit evaluator(const expr::Unary<F, E>& n) : f(n.f), e(n.e) {}
  auto cursor() const { return backend::cpu::unary_cursor<F, decltype(e.cursor())>{f, e.cursor()}; }
};

template <class F, class L, class R> struct evaluator<expr::Binary<F, L, R>, cpu> {
  const F& f;
  backend::cpu::evaluator<L> l;
  backend::cpu::evaluator<R> r;
  explicit evaluator(const expr::Binary<F, L, R>& n) : f(n.f), l(n.l), r(n.r) { (void)n.dims(); }
  auto cursor() const { return backend::cpu::binary_cursor<F, decltype(l.cursor()), decltype(r.cursor())>{f, l.cursor(), r.cursor()}; }
};

template <class C, class A, class B> struct evaluator<expr::Select<C, A, B>, cpu> {
  backend::cpu::evaluator<C> c;
  backend::cpu::evaluator<A> a;
  backend::cpu::evaluator<B> b;
  explicit evaluator(const expr::Select<C, A, B>& n) : c(n.c), a(n.a), b(n.b) { (void)n.dims(); }
  auto cursor() const {
    return backend::cpu::select_cursor<decltype(c.cursor()), decltype(a.cursor()), decltype(b.cursor())>{c.cursor(), a.cursor(), b.cursor()};
  }
};

template <class E, class S, class M> struct evaluator<expr::Strided<E, S, M>, cpu> {
  using T = value_t<E>;
  backend::cpu::source<E, false> src;
  cpu::buffer<T> tmp;
  expr::strided_view<T, std::size_t(S::rank)> v;
  explicit evaluator(const expr::Strided<E, S, M>& n) : src(n.e) {
    if (n.m.map(src.v, v)) return;
    // The mapping needs contiguous memory (a reshape of a transposed operand): copy once.
    const auto d = src.v.dims;
    tmp = cpu::buffer<T>(product(d), false);
    backend::cpu::execute(tmp.data(), d, backend::cpu::strided_cursor<T>(src.v));
    n.m.map(expr::strided_view<T, backend::cpu::source<E, false>::R>{tmp.data(), d, row_major_strides(d)}, v);
  }
  auto view() const { return v; }
  auto cursor() const { return backend::cpu::strided_cursor<T>(v); }
};

template <class K, class... Ops> struct evaluator<expr::Computed<K, Ops...>, cpu> {
  using T = typename K::value_type;
  static constexpr std::size_t R = std::size_t(K::shape_type::rank);
  static constexpr bool strided_ok = requires { requires backend::cpu::kernel<K>::strided_operands; };
  cpu::buffer<T> out;
  expr::strided_view<T, R> v;

  /// Runs the kernel into dest (the destination of an assignment) or into memory of its own.
  explicit evaluator(const expr::Computed<K, Ops...>& n, T* dest = nullptr) : evaluator(n, dest, nullptr) {}
  /// The same, filling a saving kernel's by-product too (expr/computed.hpp).
  template <class U> evaluator(const expr::Computed<K, Ops...>& n, T* dest, U saved) {
    std::apply([&](const auto&... ops) { run(n, dest, saved, backend::cpu::source<std::remove_cvref_t<decltype(ops)>, !strided_ok>(ops)...); }, n.ops);
  }
  auto view() const { return v; }
  auto cursor() const { return backend::cpu::strided_cursor<T>(v); }

 private:
  template <class U, class... Src> void run(const expr::Computed<K, Ops...>& n, T* dest, U saved, const Src&... srcs) {
    const auto d = n.dims();
    if (!dest) {
      out = cpu::buffer<T>(product(d), false);
      dest = out.data();
    }
    auto compute = [&] {
      const backend::cpu::kernel<K> kernel{n.k};
      if constexpr (std::is_same_v<U, std::nullptr_t>) kernel.run(dest, srcs.v...);
      else kernel.run(dest, saved, srcs.v...);
    };
    if (detail::profile::on()) {
      const std::int64_t begin = detail::profile::now_ns();
      compute();
      detail::observe::finish_op<expr::Computed<K, Ops...>>(cpu::name, begin, dest, d, srcs.v...);
    } else {
      compute();
    }
    v = expr::strided_view<T, R>{dest, d, row_major_strides(d)};
  }
};

}  // namespace ctflow

namespace ctflow::backend::cpu {

// ---- assignment -----------------------------------------------------------------------------

/// Evaluates e into the contiguous memory out of extents d (those of e).
template <class T, std::size_t R, class E> void assign(T* out, const dims_t<R>& d, const E& e) {
  using N = std::remove_cvref_t<E>;
  if constexpr (expr::is_computed<N>::value) {
    evaluator<N> ev(e, out);
  } else {
    evaluator<N> ev(e);
    if (detail::profile::on()) {
      const std::int64_t begin = detail::profile::now_ns();
      execute(out, d, ev.cursor());
      detail::observe::finish_fused(ctflow::cpu::name, begin, e, out, d);
    } else {
      execute(out, d, ev.cursor());
    }
  }
}

}  // namespace ctflow::backend::cpu

namespace ctflow {

template <> struct executor<cpu> {
  template <class T, std::size_t R, class E> static void assign(T* out, const dims_t<R>& d, const E& e) { backend::cpu::assign(out, d, e); }
  template <class T, class U, class K, class... Ops> static void assign_saving(T* out, U* saved, const expr::Computed<K, Ops...>& n) {
    backend::cpu::evaluator<expr::Computed<K, Ops...>> ev(n, out, saved);
  }
};

}  // namespace ctflow
