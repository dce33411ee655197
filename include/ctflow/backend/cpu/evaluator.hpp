#pragma once
// CPU evaluators, one per node type: evaluator<Node, cpu> (the Eigen split: node / evaluator /
// executor). An evaluator computes the boundaries below it once (materialised results it owns)
// and hands out cursors, small copyable readers the fused loop runs on. Addressable evaluators
// (leaves, views, computed results) also expose their memory as a strided_view. A boundary's
// result comes from its CPU kernel, kernel<Op> (kernels/<family>.hpp).

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ctflow/core/concepts.hpp>
#include <ctflow/core/device.hpp>
#include <ctflow/detail/buffer.hpp>
#include <ctflow/detail/float_environment.hpp>
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
/// An op that runs itself (expr/computed.hpp's `runs_itself`: it evaluates expressions of its
/// own, each on its device) is its own kernel.
template <class Op> requires expr::runs_itself<Op> struct kernel<Op> : Op {};

template <class E> using evaluator = ctflow::evaluator<std::remove_cvref_t<E>, ctflow::cpu>;

// ---- cursors --------------------------------------------------------------------------------

/// Reads strided memory at positions of the destination, broadcasting extents of 1. Where it is
/// in the destination's rows is its layout's business (executor.hpp), which holds no type.
template <class T> struct strided_cursor {
  using compute_type = compute_t<T>;
  static constexpr bool vectorizable = simd_type_v<T>;
  static constexpr std::size_t leaf_count = 1;
  leaf_layout at;

  template <std::size_t R> explicit strided_cursor(const strided_view<T, R>& v)
      : at(reinterpret_cast<const std::byte*>(v.data), sizeof(T), int(R), v.dims.data(), v.strides.data()) {}
  /// f(layout) for each leaf that reads memory.
  template <class F> void leaves(F&& f) { f(at); }
  const T* row() const { return reinterpret_cast<const T*>(at.row); }
  compute_type coeff(std::size_t j) const { return compute_type(row()[std::ptrdiff_t(j) * at.inner]); }
  /// Elements j .. j + n - 1 of the row in the first n lanes (n short of a vector: a row's
  /// tail); nothing past them is read. Always inlined: left to itself, GCC calls it out of line
  /// from the loops of larger expressions (sigmoid, exp), which then run at half their speed.
  inline __attribute__((always_inline)) batch<compute_type> packet(std::size_t j, std::size_t n = lanes<T>) const requires vectorizable {
    if (at.inner == 1) [[likely]] return n == lanes<T> ? batch<T>::load_unaligned(row() + j) : load_partial(row() + j, n);
    if (at.inner == 0) return batch<T>(*row());
    return gather(row() + std::ptrdiff_t(j) * at.inner, at.inner, n);
  }
  /// n elements (at most a vector) from p, `stride` apart: out of line, as it is rare (a
  /// transposed or strided last axis) and its code, inlined, is a dozen times a contiguous load's.
  CTFLOW_OUTLINE static batch<T> gather(const T* p, std::ptrdiff_t stride, std::size_t n) {
    alignas(64) T tmp[lanes<T>] = {};
    for (std::size_t l = 0; l < n; ++l) tmp[l] = p[std::ptrdiff_t(l) * stride];
    return batch<T>::load_aligned(tmp);
  }
};

/// Reads contiguous memory with the destination's extents (the flat loop's leaves).
template <class T> struct contiguous_cursor {
  using compute_type = compute_t<T>;
  static constexpr bool vectorizable = simd_type_v<T>;
  const T* data = nullptr;
  compute_type coeff(std::size_t j) const { return compute_type(data[j]); }
  batch<compute_type> packet(std::size_t j, std::size_t n = lanes<T>) const requires vectorizable {
    return n == lanes<T> ? batch<T>::load_unaligned(data + j) : load_partial(data + j, n);
  }
};

template <class T> struct scalar_cursor {
  using compute_type = T;
  static constexpr bool vectorizable = simd_type_v<T>;
  static constexpr std::size_t leaf_count = 0;
  T value;
  template <class F> void leaves(F&&) {}
  T coeff(std::size_t) const { return value; }
  batch<T> packet(std::size_t, std::size_t = lanes<T>) const requires vectorizable { return batch<T>(value); }
};

template <class F, class C> struct unary_cursor {
  using in_type = typename C::compute_type;
  using compute_type = decltype(std::declval<const F&>()(std::declval<in_type>()));
  static constexpr bool vectorizable =
      C::vectorizable && std::is_same_v<compute_type, in_type> && F::template packet_ok<in_type>;
  static constexpr std::size_t leaf_count = C::leaf_count;
  F f;
  C c;
  template <class G> void leaves(G&& g) { c.leaves(g); }
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
  static constexpr std::size_t leaf_count = L::leaf_count + R::leaf_count;
  F f;
  L l;
  R r;
  template <class G> void leaves(G&& g) { l.leaves(g); r.leaves(g); }
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
  static constexpr std::size_t leaf_count = C::leaf_count + A::leaf_count + B::leaf_count;
  C c;
  A a;
  B b;
  template <class G> void leaves(G&& g) { c.leaves(g); a.leaves(g); b.leaves(g); }
  compute_type coeff(std::size_t j) const { return c.coeff(j) ? a.coeff(j) : b.coeff(j); }
  batch<compute_type> packet(std::size_t j, std::size_t n = lanes<compute_type>) const requires vectorizable {
    return xsimd::select(c.mask(j, n), a.packet(j, n), b.packet(j, n));
  }
};

// ---- materialising --------------------------------------------------------------------------

/// The destination of an assignment, offered to the first boundary that the root reaches through
/// element-wise nodes alone and that has the destination's dtype and extents (the convolution
/// of `relu(conv2d(x, f) + b)`): its kernel writes into the destination, and the fused loop then
/// reads each element there before it writes it. A layer's pre-activation thus takes no memory of
/// its own, nor room in the cache beside the next layer's weights. assign() makes the offer only
/// where the expression reads no memory of the destination; it is withdrawn while the operands of
/// a boundary or a view are evaluated (`source`) and while a kernel runs (they read at other
/// positions).
struct destination_offer {
  const void* dtype;  // &dtype_tag<T>
  void* data;
  const std::size_t* dims;
  std::size_t rank;
};
template <class T> inline constexpr char dtype_tag = 0;
constinit inline thread_local destination_offer* offered = nullptr;

/// Withdraws the offer, returning it (to be put back with restore_offer). Out of line, as below:
/// every boundary's evaluator calls them, and their code is the same for all.
CTFLOW_OUTLINE inline destination_offer* withdraw_offer() { return std::exchange(offered, nullptr); }
CTFLOW_OUTLINE inline void restore_offer(destination_offer* o) { offered = o; }

/// Makes offer o (none: withdraws the offer) for its lifetime.
class offer_scope {
 public:
  explicit offer_scope(destination_offer* o = nullptr) : saved_(std::exchange(offered, o)) {}
  ~offer_scope() { offered = saved_; }
  offer_scope(const offer_scope&) = delete;
  offer_scope& operator=(const offer_scope&) = delete;

 private:
  destination_offer* saved_;
};

/// Whether a boundary of dtype T and rank R lies under N through element-wise nodes alone (a type
/// test: assign() looks for the destination among the expression's leaves only where one does).
template <class N, class T, std::size_t R> struct reaches_boundary : std::false_type {};
template <class K, class... Ops, class T, std::size_t R>
struct reaches_boundary<expr::Computed<K, Ops...>, T, R>
    : std::bool_constant<std::is_same_v<typename K::value_type, T> && std::size_t(K::shape_type::rank) == R> {};
template <class F, class E, class T, std::size_t R>
struct reaches_boundary<expr::Unary<F, E>, T, R> : reaches_boundary<std::remove_cvref_t<E>, T, R> {};
template <class F, class L, class Rt, class T, std::size_t R> struct reaches_boundary<expr::Binary<F, L, Rt>, T, R>
    : std::bool_constant<reaches_boundary<std::remove_cvref_t<L>, T, R>::value || reaches_boundary<std::remove_cvref_t<Rt>, T, R>::value> {};
template <class C, class A, class B, class T, std::size_t R> struct reaches_boundary<expr::Select<C, A, B>, T, R>
    : std::bool_constant<reaches_boundary<std::remove_cvref_t<C>, T, R>::value || reaches_boundary<std::remove_cvref_t<A>, T, R>::value ||
                         reaches_boundary<std::remove_cvref_t<B>, T, R>::value> {};

/// The offered destination if it has this dtype (&dtype_tag<T>), rank r and extents d, taken (no
/// other boundary gets it); null otherwise.
CTFLOW_OUTLINE inline void* take_offer(const void* dtype, std::size_t r, const std::size_t* d) {
  destination_offer* o = offered;
  if (!o || o->dtype != dtype || o->rank != r || !std::equal(d, d + r, o->dims)) return nullptr;
  offered = nullptr;
  return o->data;
}

template <class Ev> concept addressable = requires(const Ev& ev) { ev.view(); };

/// The value of cursors (c, fc) over extents d, evaluated into new memory tmp: one function per
/// cursor type, which every expression of that cursor type calls (inlined into each, the fused
/// loop's code would be compiled again for each).
template <class T, std::size_t R, class C, class FC>
CTFLOW_OUTLINE strided_view<T, R> materialize(const dims_t<R>& d, const C& c, const FC& fc, detail::buffer<T>& tmp) {
  tmp = detail::buffer<T>(product(d), false);
  execute(tmp.data(), d.data(), int(R), c, fc);
  return strided_view<T, R>{tmp.data(), d, row_major_strides(d)};
}

/// A contiguous copy of the memory of v in tmp: one function per dtype and rank.
template <class T, std::size_t R> strided_view<T, R> contiguous_copy(const strided_view<T, R>& v, detail::buffer<T>& tmp) {
  return materialize(v.dims, strided_cursor<T>(v), contiguous_cursor<T>{v.data}, tmp);
}

/// Memory holding the value of an expression: the operand's own memory when it has some (and it
/// is contiguous, if asked), a materialised copy otherwise.
template <class E, bool Contiguous> struct source {
  using N = std::remove_cvref_t<E>;
  using T = value_t<E>;
  static constexpr std::size_t R = std::size_t(rank_v<E>);
  destination_offer* held = withdraw_offer();  // while ev is made
  evaluator<N> ev;
  detail::buffer<T> tmp;
  strided_view<T, R> v;

  explicit source(const N& e) : ev(e) {
    restore_offer(held);
    if constexpr (addressable<decltype(ev)>) {
      v = ev.view();
      if constexpr (Contiguous)
        if (!v.contiguous()) v = contiguous_copy(v, tmp);
    } else {
      v = materialize(e.dims(), ev.cursor(), ev.flat_cursor(), tmp);
    }
  }
};

/// Runs op k's kernel over its operands' memory views into dest (the destination of an
/// assignment), or into the destination on offer, or into memory of its own (out), returning the
/// result's view; with `saved`, the form that also leaves the op's by-product for its gradient.
/// One function per op and operand views, whatever expressions the operands were: a node type's
/// evaluator only makes their sources.
template <class K, class T, std::size_t R, class U, class... V>
strided_view<T, R> run_kernel(const K& k, const dims_t<R>& d, T* dest, ctflow::cpu::buffer<T>& out, U saved, const V&... views) {
  if (!dest) dest = static_cast<T*>(take_offer(&dtype_tag<T>, R, d.data()));
  if (!dest) {
    out = ctflow::cpu::buffer<T>(product(d), false);
    dest = out.data();
  }
  // Withdrawn while the kernel runs, put back after (if untaken) for the next boundary. No
  // scope object: a throw leaves it withdrawn until assign()'s scope ends.
  destination_offer* const held = withdraw_offer();
  auto compute = [&] {
    const kernel<K> op{k};
    if constexpr (std::is_same_v<U, std::nullptr_t>) op.run(dest, views...);
    else op.run(dest, saved, views...);
  };
  if (detail::profile::on()) {
    const std::int64_t begin = detail::profile::now_ns();
    compute();
    // Labelled by the op alone: the label of a node is its op's (detail/observe.hpp).
    detail::observe::finish_op<expr::Computed<K>>(ctflow::cpu::name, begin, dest, d, views...);
  } else {
    compute();
  }
  restore_offer(held);
  return strided_view<T, R>{dest, d, row_major_strides(d)};
}

}  // namespace ctflow::backend::cpu

namespace ctflow {

// ---- evaluators -----------------------------------------------------------------------------

template <class E> requires is_leaf_v<E> struct evaluator<E, cpu> {
  using T = value_t<E>;
  expr::strided_view<T, std::size_t(rank_v<E>)> v;
  explicit evaluator(const E& e) : v{e.data(), e.dims(), e.strides()} {}
  auto view() const { return v; }
  auto cursor() const { return backend::cpu::strided_cursor<T>(v); }
  auto flat_cursor() const { return backend::cpu::contiguous_cursor<T>{v.data}; }
};

template <class T> struct evaluator<expr::Scalar<T>, cpu> {
  compute_t<T> value;
  explicit evaluator(const expr::Scalar<T>& s) : value(s.value) {}
  auto cursor() const { return backend::cpu::scalar_cursor<compute_t<T>>{value}; }
  auto flat_cursor() const { return cursor(); }
};

template <class F, class E> struct evaluator<expr::Unary<F, E>, cpu> {
  const F& f;
  backend::cpu::evaluator<E> e;
  explicit evaluator(const expr::Unary<F, E>& n) : f(n.f), e(n.e) {}
  auto cursor() const { return backend::cpu::unary_cursor<F, decltype(e.cursor())>{f, e.cursor()}; }
  auto flat_cursor() const { return backend::cpu::unary_cursor<F, decltype(e.flat_cursor())>{f, e.flat_cursor()}; }
};

template <class F, class L, class R> struct evaluator<expr::Binary<F, L, R>, cpu> {
  const F& f;
  backend::cpu::evaluator<L> l;
  backend::cpu::evaluator<R> r;
  explicit evaluator(const expr::Binary<F, L, R>& n) : f(n.f), l(n.l), r(n.r) { (void)n.dims(); }
  auto cursor() const { return backend::cpu::binary_cursor<F, decltype(l.cursor()), decltype(r.cursor())>{f, l.cursor(), r.cursor()}; }
  auto flat_cursor() const {
    return backend::cpu::binary_cursor<F, decltype(l.flat_cursor()), decltype(r.flat_cursor())>{f, l.flat_cursor(), r.flat_cursor()};
  }
};

template <class C, class A, class B> struct evaluator<expr::Select<C, A, B>, cpu> {
  backend::cpu::evaluator<C> c;
  backend::cpu::evaluator<A> a;
  backend::cpu::evaluator<B> b;
  explicit evaluator(const expr::Select<C, A, B>& n) : c(n.c), a(n.a), b(n.b) { (void)n.dims(); }
  auto cursor() const {
    return backend::cpu::select_cursor<decltype(c.cursor()), decltype(a.cursor()), decltype(b.cursor())>{c.cursor(), a.cursor(), b.cursor()};
  }
  auto flat_cursor() const {
    return backend::cpu::select_cursor<decltype(c.flat_cursor()), decltype(a.flat_cursor()), decltype(b.flat_cursor())>{
        c.flat_cursor(), a.flat_cursor(), b.flat_cursor()};
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
    n.m.map(backend::cpu::contiguous_copy(src.v, tmp), v);
  }
  auto view() const { return v; }
  auto cursor() const { return backend::cpu::strided_cursor<T>(v); }
  auto flat_cursor() const { return backend::cpu::contiguous_cursor<T>{v.data}; }
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
    // The sources live to the end of the call, which runs the kernel over their memory.
    ctflow::detail::apply([&](const auto&... ops) {
      v = backend::cpu::run_kernel(n.k, n.dims(), dest, out, saved, backend::cpu::source<std::remove_cvref_t<decltype(ops)>, !strided_ok>(ops).v...);
    }, n.ops);
  }
  auto view() const { return v; }
  auto cursor() const { return backend::cpu::strided_cursor<T>(v); }
  auto flat_cursor() const { return backend::cpu::contiguous_cursor<T>{v.data}; }
};

}  // namespace ctflow

namespace ctflow::backend::cpu {

// ---- assignment -----------------------------------------------------------------------------

/// What the profiler and check_numerics learn of a fused loop (observe::finish()): its label,
/// its result, and the memory its leaves read. Compiled once.
CTFLOW_OUTLINE inline void observe_fused(const std::string& label, std::int64_t begin, leaf_layout* const* ls, std::size_t n,
                                            const detail::observe::result_ref& result) {
  std::string shapes;
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < n; ++i) detail::observe::add_input(shapes, bytes, ls[i]->dims.data(), std::size_t(ls[i]->rank), ls[i]->element);
  detail::observe::finish(label, ctflow::cpu::name, begin, result, shapes, bytes);
}

/// execute(), recorded for the profiler and checked for check_numerics (as the fused loop of its
/// cursor type, its functors in pre-order) while the profiler is on. One function per cursor type
/// (see materialize()).
template <class T, class C, class FC> CTFLOW_OUTLINE void execute_observed(T* out, const std::size_t* d, int r, const C& c, const FC& fc) {
  if (!detail::profile::on()) return execute(out, d, r, c, fc);
  const std::int64_t begin = detail::profile::now_ns();
  execute(out, d, r, c, fc);
  C counted = c;
  const auto ls = leaves_of(counted);
  observe_fused(detail::observe::label<C>(), begin, ls.data(), ls.size(), detail::observe::result(out, d, std::size_t(r)));
}

/// Evaluates e into the contiguous memory out of extents d (those of e).
template <class T, std::size_t R, class E> void assign(T* out, const dims_t<R>& d, const E& e) {
  using N = std::remove_cvref_t<E>;
  if constexpr (expr::is_computed<N>::value) {
    evaluator<N> ev(e, out);
  } else {
    destination_offer offer{&dtype_tag<T>, out, d.data(), R};
    bool may_offer = false;
    if constexpr (reaches_boundary<N, T, R>::value) may_offer = !expr::reads_memory(e, out, out + product(d));
    const offer_scope scope(may_offer ? &offer : nullptr);
    evaluator<N> ev(e);
    execute_observed(out, d.data(), int(R), ev.cursor(), ev.flat_cursor());
  }
}

/// Evaluates es[k] into the contiguous memory outs[k] of extents d (those of every e) as
/// successive assignments would (the caller has checked that no e reads a destination other
/// than at the index it writes): in one pass (execute_together) where every operand is
/// contiguous and of extents d, else one after the other. While check_numerics is on, one after
/// the other too: a NaN stops the assignments there, as it stops assignments in order. The
/// profiler records the pass as one op, its loops' labels joined.
template <class Outs, std::size_t R, class... E> void assign_together(const Outs& outs, const dims_t<R>& d, const E&... es) {
  const offer_scope none;  // nothing is offered: the kernels of the expressions run into memory of their own
  const std::tuple<evaluator<std::remove_cvref_t<E>>...> evs(es...);
  auto cs = std::apply([](const auto&... ev) { return std::tuple{ev.cursor()...}; }, evs);
  const auto fcs = std::apply([](const auto&... ev) { return std::tuple{ev.flat_cursor()...}; }, evs);
  constexpr std::size_t m = sizeof...(E);
  using seq = std::make_index_sequence<m>;
  auto ls = std::apply([](auto&... c) { return std::array<leaf_layout*, (std::size_t(0) + ... + std::remove_cvref_t<decltype(c)>::leaf_count)>{}; }, cs);
  std::size_t n_leaves = 0;
  std::apply([&](auto&... c) { (c.leaves([&](leaf_layout& l) { ls[n_leaves++] = &l; }), ...); }, cs);
  if (!rows::full(ls.data(), n_leaves, d.data(), int(R)) || detail::profile::on(detail::profile::checking_numerics)) {
    [&]<std::size_t... K>(std::index_sequence<K...>) { (execute_observed(std::get<K>(outs), d.data(), int(R), std::get<K>(cs), std::get<K>(fcs)), ...); }(seq{});
    return;
  }
  if (!detail::profile::on()) return execute_together(outs, product(d), fcs);
  const std::int64_t begin = detail::profile::now_ns();
  execute_together(outs, product(d), fcs);
  std::string label;
  [&]<std::size_t... K>(std::index_sequence<K...>) { ((label += (K ? " + " : "") + detail::observe::label<std::tuple_element_t<K, decltype(cs)>>()), ...); }(seq{});
  observe_fused(label, begin, ls.data(), n_leaves, detail::observe::result(std::get<m - 1>(outs), d.data(), R));
}

}  // namespace ctflow::backend::cpu

namespace ctflow {

// Every evaluation runs in TensorFlow's floating-point environment (detail/float_environment.hpp);
// the thread pool's workers run in it for good.
template <> struct executor<cpu> {
  template <class T, std::size_t R, class E> static void assign(T* out, const dims_t<R>& d, const E& e) {
    const detail::kernel_float_environment environment;
    backend::cpu::assign(out, d, e);
  }
  template <class Outs, std::size_t R, class... E> static void assign_together(const Outs& outs, const dims_t<R>& d, const E&... es) {
    const detail::kernel_float_environment environment;
    backend::cpu::assign_together(outs, d, es...);
  }
  static void set_num_threads(int n) { backend::cpu::pool().resize(n); }
  static int num_threads() { return backend::cpu::pool().size(); }
  template <class T, class U, class K, class... Ops> static void assign_saving(T* out, U* saved, const expr::Computed<K, Ops...>& n) {
    const detail::kernel_float_environment environment;
    backend::cpu::evaluator<expr::Computed<K, Ops...>> ev(n, out, saved);
  }
};

}  // namespace ctflow
