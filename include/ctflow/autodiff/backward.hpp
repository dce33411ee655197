#pragma once
// value_and_grad's backward pass: a counting walk finds how many adjoints each kept value will
// receive, then a walk generated from the loss's type sends adjoints down the rules, sums the
// adjoints of a shared value before sending them further, and accumulates at the variables.

#include <array>
#include <tuple>
#include <utility>

#include <ctflow/autodiff/forward.hpp>
#include <ctflow/core/maybe.hpp>

namespace ctflow {

namespace autodiff {

template <class WS, class... V> struct accumulator {
  WS* ws;
  std::tuple<const V*...> targets;
  std::tuple<maybe<Tensor<value_t<V>, shape_t<V>, device_t<V>>>...> grads;
  // Memory of the output's adjoint its owner gave up (bytes; null: none): the first adjoint the
  // walk must keep, on the path before it branches, is written there instead of fresh memory.
  void* donated = nullptr;
  std::size_t donated_bytes = 0;

  template <class E> static constexpr bool may_reach() { return (holds_leaf<E, V>() || ...); }

  /// The targets of leaf type L, by index (only those are instantiated for it).
  template <class L> static constexpr auto targets_of() {
    constexpr bool match[] = {std::is_same_v<L, V>..., false};
    constexpr std::size_t n = (std::size_t(0) + ... + std::size_t(std::is_same_v<L, V>));
    std::array<std::size_t, n> r{};
    for (std::size_t i = 0, k = 0; i < sizeof...(V); ++i)
      if (match[i]) r[k++] = i;
    return r;
  }
  template <class L, class G> void add(const L& leaf, const G& g) {
    static constexpr auto is = targets_of<std::remove_cvref_t<L>>();
    [&]<std::size_t... K>(std::index_sequence<K...>) { (add_to<is[K]>(leaf, g), ...); }(std::make_index_sequence<is.size()>{});
  }
  template <std::size_t I, class L, class G> void add_to(const L& leaf, const G& g) {
    if (!std::get<I>(targets) || !same_leaf(leaf, *std::get<I>(targets))) return;
    auto& out = std::get<I>(grads);
    // A variable several adjoints reach sums them; each is evaluated by the one instantiation
    // that the first uses (fusing g into the sum would instantiate its evaluation twice).
    if (!out) out.emplace(g);
    else *out += typename std::remove_cvref_t<decltype(out)>::value_type(g);
  }
};

/// Is re-evaluating G where several operands read it cheaper than keeping it in memory?
template <class G> constexpr bool cheap() { return count_boundaries<G>() == 0 && count_nodes<G>() <= 6; }

/// Does G read each leaf only at the index it writes (element-wise nodes over leaves)? Then G
/// can be evaluated into the memory of a leaf of its own extents.
template <class G> constexpr bool same_index_reads() {
  using N = std::remove_cvref_t<G>;
  if constexpr (is_leaf_v<N>) return true;
  else if constexpr (expr::is_elementwise<N>::value)
    return []<std::size_t... I>(std::index_sequence<I...>) { return (same_index_reads<operand_t<I, N>>() && ...); }(std::make_index_sequence<arity_v<N>>{});
  else return false;
}

template <class N, class G, class Ctx> void backprop(const N& n, const G& g, Ctx& ctx);
template <class N, class Ctx> void count_reads_below(const N& n, Ctx& ctx);

/// Can an adjoint flow from n to its operand I and reach a variable? The type decides whether it
/// can at all (then `flows`), the leaves' identity whether it does here.
template <std::size_t I, class N, class Ctx> constexpr bool flows() {
  return Ctx::template may_reach<operand_t<I, N>>() && rule<N>::template differentiable<I>;
}
template <std::size_t I, class N, class Ctx> bool live(const N& n, const Ctx& ctx) {
  if constexpr (flows<I, N, Ctx>()) return reaches(operand<I>(n), ctx.targets);
  else return false;
}

/// How many of n's operands an adjoint can flow to, by their types (an upper bound of `live`'s).
template <class N, class Ctx> constexpr std::size_t flowing_operands() {
  return []<std::size_t... I>(std::index_sequence<I...>) { return (std::size_t(flows<I, N, Ctx>()) + ... + 0); }(std::make_index_sequence<arity_v<N>>{});
}

/// Rule R's adjoint for operand I of n; a saving kernel's rule also reads what the forward pass
/// left for it (every such node is frozen, so `saved` is its by-product; null where that is
/// empty).
template <class R, std::size_t I, class N, class G, class Y> auto vjp_of(const N& n, const G& g, const Y& y, const void* saved) {
  if constexpr (saves_v<N>) {
    return R::template vjp<I>(n, g, y, static_cast<const typename N::op_type::saved_type*>(saved));
  } else {
    return R::template vjp<I>(n, g, y);
  }
}

/// May g be evaluated into the memory the output's owner gave up (ctx.donated)? Where g reads
/// each leaf at most at the index it writes, and that memory is g's size.
template <class G, class Ctx> bool donatable(const G& g, const Ctx& ctx) {
  if constexpr (same_index_reads<G>()) return ctx.donated && ctx.donated_bytes == product(g.dims()) * sizeof(value_t<G>);
  else return false;
}

/// Evaluates g once and calls f with a view of its value (shape S, on Device): in the memory the
/// output's owner gave up where `donatable`, else in memory of its own, which lives until f
/// returns.
template <ShapeType S, class Device, class G, class Ctx, class F> void keep(const G& g, Ctx& ctx, F&& f) {
  using T = value_t<G>;
  const auto d = g.dims();
  if (donatable(g, ctx)) {
    T* into = static_cast<T*>(std::exchange(ctx.donated, nullptr));
    executor<Device>::assign(into, d, g);
    return f(TensorView<const T, S, Device>(into, d));
  }
  typename Device::template buffer<T> kept(product(d), false);
  executor<Device>::assign(kept.data(), d, g);
  f(TensorView<const T, S, Device>(kept.data(), d));
}

template <class N, class G, class Y, class Ctx> void backprop_node(const N& n, const G& g, const Y& y, Ctx& ctx, const void* saved = nullptr) {
  using R = rule<N>;
  CTFLOW_STATIC_CHECK(R::known, ctflow::detail::fixed_string("ctflow::grad: an op of the loss has no gradient rule"));
  if constexpr (R::known) {
    constexpr std::size_t A = arity_v<N>;
    std::array<bool, A> on{};
    std::size_t count = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) { ((on[I] = live<I>(n, ctx), count += on[I]), ...); }(std::make_index_sequence<A>{});
    auto each = [&](const auto& adj) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ([&] {
          if constexpr (flows<I, N, Ctx>())
            if (on[I]) backprop(operand<I>(n), vjp_of<R, I>(n, adj, y, saved), ctx);
        }(), ...);
      }(std::make_index_sequence<A>{});
    };
    if (count == 0) return;
    // Where the operands' types let one at most read the adjoint, this branch is not compiled: it
    // would instantiate the adjoint's evaluation and, over a view of it, the walk below a second
    // time (tests/keras/losses_test.cpp: its object 28% smaller, its build a fifth shorter).
    if constexpr (flowing_operands<N, Ctx>() > 1) if (count > 1) {  // several operands read the adjoint
      // Memory its owner gave up holds it, even where re-evaluating it would be cheap: each
      // reader then streams one array (a boundary would evaluate it into memory of its own).
      if constexpr (!is_leaf_v<std::remove_cvref_t<G>>) if (donatable(g, ctx)) return keep<shape_t<G>, device_of<N>>(g, ctx, each);
      ctx.donated = nullptr;  // the walk branches: later adjoints may still read it
      if constexpr (!cheap<G>()) return keep<shape_t<G>, device_of<N>>(g, ctx, each);  // evaluate it once
    }
    each(g);
  }
}

/// Sends g down from n. A kept value read in several places first sums the adjoints of all of
/// them (count_reads says how many arrive), then sends the sum down once.
template <class N, class G, class Ctx> void backprop(const N& n, const G& g, Ctx& ctx) {
  using T = std::remove_cvref_t<N>;
  if constexpr (is_frozen_v<T>) {
    auto* k = ctx.ws->find_data(n.p);
    using V = value_t<T>;
    using view = TensorView<const V, shape_t<T>, device_of<T>>;
    if (!k || k->expected < 2) {
      // The adjoint is evaluated here, once, and the walk below reads its memory: the walk is
      // then one instantiation per kept value whatever reaches it, where passing g down lazily
      // made one per adjoint type, each beside the view's that the summing below needs anyway
      // (tests/keras/losses_test.cpp: its object 1.8 times smaller, its build half as long). A
      // boundary's adjoint (matmul's, a convolution's) was evaluated into memory by its reader
      // all the same.
      if constexpr (std::is_same_v<std::remove_cvref_t<G>, view>) return backprop_node(n.node, g, n.value(), ctx, n.saved);
      else return keep<shape_t<T>, device_of<T>>(g, ctx, [&](const view& kept) { backprop_node(n.node, kept, n.value(), ctx, n.saved); });
    }
    const auto d = n.dims();
    // The adjoints are summed in place, each evaluated once into memory of its own (as above).
    typename device_of<T>::template buffer<V> part(k->received == 0 ? 0 : product(d), false);
    if (k->received == 0) k->adjoint = decltype(k->adjoint)(product(d) * sizeof(V), false);
    V* into = k->received == 0 ? reinterpret_cast<V*>(k->adjoint.data()) : part.data();
    executor<device_of<T>>::assign(into, d, g);
    if (k->received != 0) {
      TensorView<V, shape_t<T>, device_of<T>> sum(reinterpret_cast<V*>(k->adjoint.data()), d);
      sum = sum + TensorView<const V, shape_t<T>, device_of<T>>(part.data(), d);
    }
    if (++k->received == k->expected)
      backprop_node(n.node, TensorView<const V, shape_t<T>, device_of<T>>(reinterpret_cast<const V*>(k->adjoint.data()), d), n.value(), ctx, n.saved);
  } else if constexpr (is_leaf_v<T>) {
    ctx.add(n, g);
  } else if constexpr (arity_v<T> > 0) {
    backprop_node(n, g, n, ctx);
  }
}

/// Counts the adjoints each kept value will receive: the walk backprop makes, without the math.
template <class N, class Ctx> void count_reads(const N& n, Ctx& ctx) {
  using T = std::remove_cvref_t<N>;
  if constexpr (is_frozen_v<T>) {
    auto* k = ctx.ws->find_data(n.p);
    if (k && ++k->expected > 1) return;
    count_reads_below(n.node, ctx);
  } else if constexpr (!is_leaf_v<T> && arity_v<T> > 0) {
    count_reads_below(n, ctx);
  }
}

template <class N, class Ctx> void count_reads_below(const N& n, Ctx& ctx) {
  if constexpr (rule<N>::known) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ([&] {
        if constexpr (flows<I, N, Ctx>())
          if (live<I>(n, ctx)) count_reads(operand<I>(n), ctx);
      }(), ...);
    }(std::make_index_sequence<arity_v<N>>{});
  }
}

template <class E> value_t<E> scalar_value(const E& e) {
  value_t<E> v{};
  executor<device_of<E>>::assign(&v, dims_t<0>{}, e);
  return v;
}

}  // namespace autodiff

}  // namespace ctflow
