#pragma once
// What autodiff needs to know of expression nodes: their operands (uniformly, by index), which
// leaf types a tree can hold, leaf identity, and `Frozen`, a boundary whose value the forward
// pass has computed (it keeps the node for its rule and reads its result from memory).

#include <cstddef>
#include <cstring>
#include <tuple>
#include <type_traits>

#include <ctflow/core/tensor.hpp>
#include <ctflow/expr/node.hpp>

namespace ctflow::autodiff {

/// The device an expression of type E is evaluated on.
template <class E> using device_of = placed_device_t<device_t<E>>;

/// Marks an operand no adjoint flows to (an integer operand, a comparison, stop_gradient).
struct none_t {};

/// A node N whose value sits in memory the forward pass filled (a matmul, a reduction, or an
/// element-wise operand a boundary read). It reads as a view; its rule is N's. `saved` is what a
/// saving kernel left for the gradient (expr/computed.hpp), null for every other node.
template <class N> struct Frozen {
  using ctflow_expression = void;
  using value_type = value_t<N>;
  using shape_type = shape_t<N>;
  using device_type = device_t<N>;
  static constexpr int rank = shape_type::rank;
  static constexpr bool is_view = true;
  N node;
  const value_type* p = nullptr;
  dims_t<std::size_t(rank)> d{};
  const void* saved = nullptr;
  const value_type* data() const { return p; }
  const dims_t<std::size_t(rank)>& dims() const { return d; }
  std::array<std::ptrdiff_t, std::size_t(rank)> strides() const { return row_major_strides(d); }
  std::size_t size() const { return product(d); }
  /// The value as a plain view (what rules read).
  TensorView<const value_type, shape_type, device_type> value() const { return {p, d}; }
};

}  // namespace ctflow::autodiff

namespace ctflow {
template <class N> struct is_leaf<autodiff::Frozen<N>> : std::true_type {};
}  // namespace ctflow

namespace ctflow::autodiff {

/// Is E a node whose kernel leaves a by-product for its gradient (expr/computed.hpp)?
template <class E> struct saves : std::false_type {};
template <class K, class... Ops> struct saves<expr::Computed<K, Ops...>> : std::bool_constant<expr::saving_kernel<K>> {};
template <class E> inline constexpr bool saves_v = saves<std::remove_cvref_t<E>>::value;

template <class E> struct is_frozen : std::false_type {};
template <class N> struct is_frozen<Frozen<N>> : std::true_type {};
template <class E> inline constexpr bool is_frozen_v = is_frozen<std::remove_cvref_t<E>>::value;

// ---- operands by index ----------------------------------------------------------------------

/// The operands autodiff differentiates through: a node's own (expr/node.hpp), except where a
/// node says otherwise (custom_gradient: its adjoint goes to x, through the user's vjp).
template <class N> struct node_shape {
  using operands = typename expr::node_traits<N>::operand_types;
  static constexpr std::size_t arity = std::tuple_size_v<operands>;
};

template <class N> inline constexpr std::size_t arity_v = node_shape<std::remove_cvref_t<N>>::arity;
template <std::size_t I, class N> using operand_t = std::remove_cvref_t<std::tuple_element_t<I, typename node_shape<std::remove_cvref_t<N>>::operands>>;

/// Operand I of node n.
template <std::size_t I, class N> const auto& operand(const N& n) {
  if constexpr (requires { n.f.x; n.f.vjp; }) return n.f.x;  // custom_gradient: the adjoint goes to x
  else return expr::nth_operand<I>(n);
}

// ---- which leaf types a tree holds ----------------------------------------------------------

/// How many leaves of type V E holds. (Frozen nodes look through to the node they keep.)
template <class E, class V> constexpr std::size_t count_leaf() {
  using N = std::remove_cvref_t<E>;
  if constexpr (is_frozen_v<N>) return count_leaf<decltype(N::node), V>();
  else if constexpr (is_leaf_v<N>) return std::is_same_v<N, std::remove_cvref_t<V>> ? 1 : 0;
  else return []<std::size_t... I>(std::index_sequence<I...>) {
    return (std::size_t(0) + ... + count_leaf<operand_t<I, N>, V>());
  }(std::make_index_sequence<arity_v<N>>{});
}

/// Does a leaf of type V occur in E?
template <class E, class V> constexpr bool holds_leaf() { return count_leaf<E, V>() > 0; }

/// An owning leaf (Tensor, Variable): nodes keep it by reference.
template <class E> constexpr bool is_owning_leaf() {
  if constexpr (is_leaf_v<E>) return !std::remove_cvref_t<E>::is_view;
  else return false;
}

/// Two leaves are the same variable: the same object, or views of the same memory.
template <class A, class B> bool same_leaf(const A& a, const B& b) {
  if constexpr (!std::is_same_v<std::remove_cvref_t<A>, std::remove_cvref_t<B>>) return false;
  else if constexpr (std::remove_cvref_t<A>::is_view)
    return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.dims() == b.dims() && a.strides() == b.strides();
  else return &a == &b;
}

/// Are a and b (nodes of one type) the same computation: equal parameters over the same leaves?
/// Copies of one node compare equal, so a value the user names once and reads several times is
/// computed once. (Parameters compare bytewise: a false "different" only costs sharing.)
template <class E> bool same_node(const E& a, const E& b) {
  using N = std::remove_cvref_t<E>;
  auto bytes = [](const auto& x, const auto& y) { return std::memcmp(&x, &y, sizeof(x)) == 0; };
  if constexpr (is_frozen_v<N>) return a.p == b.p;
  else if constexpr (is_leaf_v<N>) return same_leaf(a, b);
  else if constexpr (arity_v<N> == 0) return a.value == b.value;
  else {
    bool params = true;
    if constexpr (requires { a.k; }) params = bytes(a.k, b.k);
    else if constexpr (requires { a.m; }) params = bytes(a.m, b.m);
    else if constexpr (requires { a.f; }) params = bytes(a.f, b.f);
    return params && [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (same_node(operand<I>(a), operand<I>(b)) && ...);
    }(std::make_index_sequence<arity_v<N>>{});
  }
}

/// Does a leaf of e (at run time) equal one of the leaves pointed to by ptrs (null ones: none)?
template <class E, class... V> bool reaches(const E& e, const std::tuple<const V*...>& ptrs) {
  using N = std::remove_cvref_t<E>;
  if constexpr (!(holds_leaf<N, V>() || ...)) return false;
  else if constexpr (is_frozen_v<N>) return reaches(e.node, ptrs);
  else if constexpr (is_leaf_v<N>) return std::apply([&](const auto*... p) { return ((p && same_leaf(e, *p)) || ...); }, ptrs);
  else return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return (reaches(operand<I>(e), ptrs) || ...);
  }(std::make_index_sequence<arity_v<N>>{});
}

/// Boundaries in E (each is computed once by the forward pass of value_and_grad).
template <class E> constexpr std::size_t count_boundaries() {
  using N = std::remove_cvref_t<E>;
  if constexpr (is_leaf_v<N>) return 0;
  else return std::size_t(expr::is_computed<N>::value) + []<std::size_t... I>(std::index_sequence<I...>) {
    return (std::size_t(0) + ... + count_boundaries<operand_t<I, N>>());
  }(std::make_index_sequence<arity_v<N>>{});
}

/// Nodes in E (a measure of what re-evaluating it costs).
template <class E> constexpr std::size_t count_nodes() {
  using N = std::remove_cvref_t<E>;
  if constexpr (is_leaf_v<N>) return 1;
  else return 1 + []<std::size_t... I>(std::index_sequence<I...>) {
    return (std::size_t(0) + ... + count_nodes<operand_t<I, N>>());
  }(std::make_index_sequence<arity_v<N>>{});
}

}  // namespace ctflow::autodiff
