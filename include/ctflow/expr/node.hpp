#pragma once
// The node protocol every tree walk uses (aliasing checks, the profiler's labels, autodiff's
// passes): a node's operands by index, `nth_operand<I>(n)` and `apply_operands(n, f)`, their types,
// and `rebuild(n, ops...)`, the same node (its functor, view mapping or op) over other operands.
// Leaves (tensors, views of memory) and numbers have no operands.

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ctflow/expr/computed.hpp>
#include <ctflow/expr/elementwise.hpp>
#include <ctflow/expr/strided.hpp>

namespace ctflow::expr {

/// Operands (as the node stores them) and rebuilding of node type N; none for leaves and numbers.
/// `get<I>(n)` is operand I by reference: walks index the operands, they build no tuple of them.
template <class N> struct node_traits {
  using operand_types = std::tuple<>;
};

template <class F, class E> struct node_traits<Unary<F, E>> {
  using operand_types = std::tuple<E>;
  template <std::size_t> static const auto& get(const Unary<F, E>& n) { return n.e; }
  template <class E2> static auto rebuild(const Unary<F, E>& n, E2&& e) { return Unary<F, E2>{n.f, std::forward<E2>(e)}; }
};

template <class F, class L, class R> struct node_traits<Binary<F, L, R>> {
  using operand_types = std::tuple<L, R>;
  template <std::size_t I> static const auto& get(const Binary<F, L, R>& n) {
    if constexpr (I == 0) return n.l;
    else return n.r;
  }
  template <class L2, class R2> static auto rebuild(const Binary<F, L, R>& n, L2&& l, R2&& r) {
    return Binary<F, L2, R2>{n.f, std::forward<L2>(l), std::forward<R2>(r)};
  }
};

template <class C, class A, class B> struct node_traits<Select<C, A, B>> {
  using operand_types = std::tuple<C, A, B>;
  template <std::size_t I> static const auto& get(const Select<C, A, B>& n) {
    if constexpr (I == 0) return n.c;
    else if constexpr (I == 1) return n.a;
    else return n.b;
  }
  template <class C2, class A2, class B2> static auto rebuild(const Select<C, A, B>&, C2&& c, A2&& a, B2&& b) {
    return Select<C2, A2, B2>{std::forward<C2>(c), std::forward<A2>(a), std::forward<B2>(b)};
  }
};

template <class E, class S, class M> struct node_traits<Strided<E, S, M>> {
  using operand_types = std::tuple<E>;
  template <std::size_t> static const auto& get(const Strided<E, S, M>& n) { return n.e; }
  template <class E2> static auto rebuild(const Strided<E, S, M>& n, E2&& e) { return Strided<E2, S, M>{n.m, std::forward<E2>(e)}; }
};

template <class K, class... Ops> struct node_traits<Computed<K, Ops...>> {
  using operand_types = std::tuple<Ops...>;
  template <std::size_t I> static const auto& get(const Computed<K, Ops...>& n) { return ctflow::detail::get<I>(n.ops); }
  template <class... O2> static auto rebuild(const Computed<K, Ops...>& n, O2&&... ops) {
    return Computed<K, O2...>{n.k, {{{std::forward<O2>(ops)}...}}};
  }
};

/// How many operands a node of type N has.
template <class N> inline constexpr std::size_t arity_v = std::tuple_size_v<typename node_traits<std::remove_cvref_t<N>>::operand_types>;
/// The type of operand I of N (without references).
template <std::size_t I, class N>
using operand_t = std::remove_cvref_t<std::tuple_element_t<I, typename node_traits<std::remove_cvref_t<N>>::operand_types>>;

/// Operand I of n, by reference.
template <std::size_t I, class N> const auto& nth_operand(const N& n) { return node_traits<std::remove_cvref_t<N>>::template get<I>(n); }
/// f(operand 0, operand 1, ...) of n; f() for leaves and numbers.
template <class N, class F> decltype(auto) apply_operands(const N& n, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) -> decltype(auto) {
    return f(nth_operand<I>(n)...);
  }(std::make_index_sequence<arity_v<N>>{});
}
/// n over other operands, with n's functor, view mapping or op.
template <class N, class... E> auto rebuild(const N& n, E&&... ops) {
  return node_traits<std::remove_cvref_t<N>>::rebuild(n, std::forward<E>(ops)...);
}

/// Whether any operand of n satisfies pred(operand) (a run-time test per operand, in order).
template <class N, class P> bool any_operand(const N& n, P&& pred) {
  return apply_operands(n, [&](const auto&... o) { return (pred(o) || ...); });
}

/// Does e read any memory in [b, end)?
template <class E> bool reads_memory(const E& e, const void* b, const void* end) {
  if constexpr (is_leaf_v<E>) {
    return static_cast<const void*>(e.data()) < end && b < static_cast<const void*>(e.data() + e.size());
  } else {
    // (One lambda per node, not any_operand's three: assignments instantiate this for every node.)
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return (reads_memory(nth_operand<I>(e), b, end) || ...); }(
        std::make_index_sequence<arity_v<E>>{});
  }
}

}  // namespace ctflow::expr
