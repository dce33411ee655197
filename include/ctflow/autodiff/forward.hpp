#pragma once
// value_and_grad's forward pass: the loss rebuilt with every boundary, and every element-wise
// operand a boundary reads, computed once into kept memory (Frozen nodes); copies of one node are
// recognised and computed once.

#include <array>
#include <stdexcept>

#include <ctflow/autodiff/checks.hpp>

namespace ctflow {

namespace autodiff {

template <class E> constexpr std::size_t slots();


/// Slots a boundary's operand takes: element-wise operands are materialised too (the kernel
/// reads them, and the backward pass reuses them).
template <class E> constexpr std::size_t operand_slots() {
  using N = std::remove_cvref_t<E>;
  if constexpr (expr::is_elementwise<N>::value && arity_v<N> > 0) return 1 + slots<N>();
  else if constexpr (expr::is_strided<N>::value) return operand_slots<operand_t<0, N>>();
  else return slots<N>();
}

template <class E> constexpr std::size_t slots() {
  using N = std::remove_cvref_t<E>;
  if constexpr (is_leaf_v<N>) return 0;
  else if constexpr (expr::is_computed<N>::value)
    return 1 + []<std::size_t... I>(std::index_sequence<I...>) { return (std::size_t(0) + ... + operand_slots<operand_t<I, N>>()); }(std::make_index_sequence<arity_v<N>>{});
  else return []<std::size_t... I>(std::index_sequence<I...>) { return (std::size_t(0) + ... + slots<operand_t<I, N>>()); }(std::make_index_sequence<arity_v<N>>{});
}

/// What the forward pass keeps of a boundary: where its value is (memory of its own), what a
/// saving kernel left for its gradient, the node it came from (to recognise copies of it), and
/// during the backward pass its adjoint, summed over every place that reads it before it is sent
/// further down. Its memory comes from the device the loss is evaluated on.
template <class Device> struct kept_value {
  using bytes = typename Device::template buffer<std::byte>;
  const void* type = nullptr;    // one tag per node type
  const void* origin = nullptr;  // the node in the user's expression
  const void* data = nullptr;
  bytes memory, saved;
  std::size_t expected = 0, received = 0;
  bytes adjoint;
};

template <class E> inline constexpr char type_tag = 0;

/// Memory for the values the forward pass keeps, from `Device` (on the CPU, blocks come back to
/// its cache when the pass ends).
template <std::size_t N, class Device> struct workspace {
  using kept_value = autodiff::kept_value<Device>;
  std::array<kept_value, N> kept;
  std::size_t next = 0;

  /// The kept value of a copy of `origin` computed before, if any.
  template <class E> kept_value* find(const E& origin) {
    for (std::size_t i = 0; i < next; ++i)
      if (kept[i].type == &type_tag<E> && same_node(*static_cast<const E*>(kept[i].origin), origin)) return &kept[i];
    return nullptr;
  }
  kept_value* find_data(const void* data) {
    for (std::size_t i = 0; i < next; ++i) if (kept[i].data == data) return &kept[i];
    return nullptr;
  }
  /// A kept value of n elements of T in memory of its own, or at `into` (the caller's).
  template <class T, class E> kept_value& take(const E& origin, std::size_t n, T* into = nullptr) {
    if (next == N) throw std::logic_error("ctflow::value_and_grad: forward pass needs more slots than counted");
    kept_value& k = kept[next++];
    if (!into) k.memory = decltype(k.memory)(n * sizeof(T), false);
    k.type = &type_tag<E>;
    k.origin = &origin;
    k.data = into ? static_cast<const void*>(into) : k.memory.data();
    return k;
  }
};

/// The value of n (the frozen form of `origin`): computed into kept memory (or into `into`), or
/// found computed already when `origin` is a copy of a node seen before. A saving kernel fills
/// its by-product into kept memory too.
template <class E, class N, class WS> Frozen<N> materialize(const E& origin, N&& n, WS& ws, value_t<N>* into = nullptr) {
  using T = value_t<N>;
  const auto d = n.dims();
  if (auto* k = ws.find(origin)) return Frozen<N>{std::move(n), static_cast<const T*>(k->data), d, k->saved.data()};
  auto& k = ws.template take<T>(origin, product(d), into);
  T* p = const_cast<T*>(static_cast<const T*>(k.data));
  if constexpr (saves_v<N>) {
    using U = typename N::op_type::saved_type;
    k.saved = decltype(k.saved)(n.k.saved_size() * sizeof(U), false);
    executor<placed_device_t<device_t<N>>>::assign_saving(p, reinterpret_cast<U*>(k.saved.data()), n);
  } else {
    executor<placed_device_t<device_t<N>>>::assign(p, d, n);
  }
  return Frozen<N>{std::move(n), p, d, k.saved.data()};
}

template <class E, class WS> decltype(auto) freeze(const E& e, WS& ws);

template <class E, class WS> decltype(auto) freeze_operand(const E& e, WS& ws) {
  using N = std::remove_cvref_t<E>;
  if constexpr (expr::is_elementwise<N>::value && arity_v<N> > 0) {
    return materialize(e, freeze(e, ws), ws);
  } else if constexpr (expr::is_strided<N>::value) {
    return expr::rebuild(e, freeze_operand(expr::nth_operand<0>(e), ws));
  } else {
    return freeze(e, ws);
  }
}

/// The loss with every boundary computed: the same tree, boundaries replaced by Frozen nodes.
template <class E, class WS> decltype(auto) freeze(const E& e, WS& ws) {
  using N = std::remove_cvref_t<E>;
  if constexpr (is_leaf_v<N>) {
    if constexpr (N::is_view) return N(e);
    else return static_cast<const N&>(e);
  } else if constexpr (expr::arity_v<N> == 0) {
    return N(e);
  } else if constexpr (expr::is_computed<N>::value) {
    return expr::apply_operands(e, [&](const auto&... ops) { return materialize(e, expr::rebuild(e, freeze_operand(ops, ws)...), ws); });
  } else {
    return expr::apply_operands(e, [&](const auto&... ops) { return expr::rebuild(e, freeze(ops, ws)...); });
  }
}

/// Activations whose rule gives the same adjoint when it reads their value in place of their
/// operand: it reads the operand only through its sign or the activation's flat pieces (relu:
/// x > 0 exactly where y > 0), or not at all (tanh, sigmoid, exp).
template <class F> inline constexpr bool adjoint_from_value = false;
template <> inline constexpr bool adjoint_from_value<ops::relu_fn> = true;
template <> inline constexpr bool adjoint_from_value<ops::relu6_fn> = true;
template <> inline constexpr bool adjoint_from_value<ops::elu_fn> = true;
template <> inline constexpr bool adjoint_from_value<ops::selu_fn> = true;
template <> inline constexpr bool adjoint_from_value<ops::tanh_fn> = true;
template <> inline constexpr bool adjoint_from_value<ops::sigmoid_fn> = true;
template <> inline constexpr bool adjoint_from_value<ops::exp_fn> = true;

/// A boundary whose rule needs nothing the forward pass leaves (its value is never read: the
/// rules of add and subtract above it do not read theirs).
template <class E> inline constexpr bool plain_boundary = expr::is_computed<std::remove_cvref_t<E>>::value && !saves_v<E>;

/// A layer's output: activation(boundary + bias) (or - bias), the activation one of the above.
template <class E> struct activated_sum : std::false_type {};
template <class F, class X> struct activated_sum<expr::Unary<F, X>> {
  template <class S> struct sum : std::false_type {};
  template <class G, class L, class R>
  struct sum<expr::Binary<G, L, R>>
      : std::bool_constant<(std::is_same_v<G, ops::add_fn> || std::is_same_v<G, ops::subtract_fn>) &&
                           ((plain_boundary<L> && is_leaf_v<std::remove_cvref_t<R>>) || (is_leaf_v<std::remove_cvref_t<L>> && plain_boundary<R>))> {};
  static constexpr bool value = adjoint_from_value<F> && sum<std::remove_cvref_t<X>>::value;
};

/// An operand of activated_sum's sum: the boundary rebuilt over frozen operands but not
/// computed, or the bias.
template <class E, class WS> decltype(auto) open_boundary(const E& e, WS& ws) {
  if constexpr (expr::is_computed<std::remove_cvref_t<E>>::value)
    return expr::apply_operands(e, [&](const auto&... ops) { return expr::rebuild(e, freeze_operand(ops, ws)...); });
  else
    return freeze(e, ws);
}

/// freeze(e) with e's value written to out (of e's extents): a boundary at the root is computed
/// straight into out, anything else is evaluated into it. An activated_sum (a Dense or Conv2D
/// layer's relu(matmul(x, kernel) + bias)) is evaluated in one assignment, its boundary into out,
/// and keeps nothing else: the backward pass reads out for the activation's value and its
/// operand alike, and the boundary's rule reads only the boundary's operands.
template <class E, class WS> decltype(auto) freeze_into(const E& e, WS& ws, value_t<E>* out) {
  using N = std::remove_cvref_t<E>;
  if constexpr (expr::is_computed<N>::value) {
    return expr::apply_operands(e, [&](const auto&... ops) { return materialize(e, expr::rebuild(e, freeze_operand(ops, ws)...), ws, out); });
  } else if constexpr (activated_sum<N>::value) {
    const auto& x = expr::nth_operand<0>(e);
    auto sum = expr::apply_operands(x, [&](const auto&... ops) { return expr::rebuild(x, open_boundary(ops, ws)...); });
    const auto d = e.dims();
    executor<placed_device_t<device_t<N>>>::assign(out, d, expr::rebuild(e, decltype(sum)(sum)));
    auto root = expr::rebuild(e, Frozen<decltype(sum)>{std::move(sum), out, d, nullptr});
    return Frozen<decltype(root)>{std::move(root), out, d, nullptr};
  } else {
    decltype(auto) f = freeze(e, ws);
    executor<placed_device_t<device_t<N>>>::assign(out, e.dims(), f);
    return f;
  }
}

}  // namespace autodiff

}  // namespace ctflow
