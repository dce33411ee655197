#pragma once
// Gradient rules of shape ops. A view's adjoint is its transpose: a reshape goes back through a
// reshape (a view again); every other view (transpose, slice, strided_slice, reverse,
// broadcast_to, expand_dims, squeeze) scatters the adjoint into zeros of the operand's extents,
// adding where the view read one element several times (broadcasting). concat's adjoint is a
// slice per operand, gather's a scatter-add, pad's and tile's a sum over the elements that read
// each input. Each adjoint kernel has its own rule (the forward op), so gradients of gradients
// work.

#include <algorithm>
#include <cstring>

#include <ctflow/autodiff/rule.hpp>
#include <ctflow/autodiff/rules/elementwise.hpp>

namespace ctflow::autodiff {

template <class E, class S, class M> struct rule<expr::Strided<E, S, M>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = is_floating_v<value_t<E>>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    using SE = shape_t<E>;
    constexpr std::size_t RE = std::size_t(SE::rank);
    if constexpr (std::is_same_v<M, ops::reshape_map<std::size_t(S::rank)>>) {
      ops::reshape_map<RE> back;
      back.out_dims = n.e.dims();
      return ops::make_view<SE>(back, G(g));
    } else if constexpr (std::is_same_v<M, detail::gate_map<RE>>) {
      return detail::gate_view(g, n.m.on, n.e.dims());
    } else {
      ops::view_adjoint_op<value_t<E>, SE, S, M> k;
      k.out_dims = n.e.dims();
      k.m = n.m;
      return expr::make_computed(k, G(g));
    }
  }
};

/// The adjoint of the view's transpose is the view.
template <class T, class SE, class S, class M, class G0> struct rule<expr::Computed<ops::view_adjoint_op<T, SE, S, M>, G0>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = true;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    return ops::make_view<S>(n.k.m, G(g));
  }
};

template <class T, class S, int Axis, std::size_t NOps, class... Ops> struct rule<expr::Computed<ops::concat_op<T, S, Axis, NOps>, Ops...>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = is_floating_v<T>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    constexpr std::size_t R = std::size_t(S::rank);
    ops::affine_map<R, R> m;
    m.out_dims = operand<I>(n).dims();
    for (std::size_t k = 0; k < R; ++k) m.coef[k][k] = 1;
    for (std::size_t j = 0; j < I; ++j) m.begin[std::size_t(Axis)] += std::ptrdiff_t(n.k.along[j]);
    return ops::make_view<shape_t<operand_t<I, N>>>(m, G(g));
  }
};

template <class T, class SP, class SI, class S, int Axis, class IT, class P, class Idx>
struct rule<expr::Computed<ops::gather_op<T, SP, SI, S, Axis, IT>, P, Idx>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = I == 0 && is_floating_v<T>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    ops::gather_adjoint_op<T, SP, S, SI, Axis, IT> k;
    k.out_dims = operand<0>(n).dims();
    return expr::make_computed(k, G(g), operand<1>(n));
  }
};

/// The adjoint of gather's scatter-add is the gather.
template <class T, class SP, class SG, class SI, int Axis, class IT, class G0, class Idx>
struct rule<expr::Computed<ops::gather_adjoint_op<T, SP, SG, SI, Axis, IT>, G0, Idx>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = I == 0;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    ops::gather_op<T, SP, SI, SG, Axis, IT> k;
    k.out_dims = operand<0>(n).dims();
    return expr::make_computed(k, G(g), operand<1>(n));
  }
};

template <class T, class SIn, class S, bool Tile, class E> struct rule<expr::Computed<ops::index_map_op<T, SIn, S, Tile>, E>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = is_floating_v<T>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    ops::index_map_adjoint_op<ops::index_map_op<T, SIn, S, Tile>, shape_t<E>> k;
    k.out_dims = operand<0>(n).dims();
    k.forward = n.k;
    return expr::make_computed(k, G(g));
  }
};

/// The adjoint of pad's or tile's adjoint is pad (with zeros) or tile again.
template <class K, class SIn, class G0> struct rule<expr::Computed<ops::index_map_adjoint_op<K, SIn>, G0>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = true;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    K k = n.k.forward;
    k.constant = typename K::value_type(0);
    return expr::make_computed(k, G(g));
  }
};

}  // namespace ctflow::autodiff
