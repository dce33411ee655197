#pragma once
// Gradient rules of reductions and scans. reduce_sum / reduce_mean broadcast the adjoint back
// (a view: it fuses into whatever reads it); reduce_max / reduce_min share it among the elements
// equal to the result, as TensorFlow does; reduce_prod gives each element the product of the
// others (exact with zeros); cumsum's adjoint is the cumsum the other way.

#include <algorithm>

#include <ctflow/autodiff/rule.hpp>

namespace ctflow::autodiff {

template <template <class> class Op, class T, class SIn, bool Keep, bool Mean, int... Axes, class E>
struct rule<expr::Computed<ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>, E>> {
  using K = ops::reduce_op<Op, T, SIn, Keep, Mean, Axes...>;
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = is_floating_v<T>;

  // The operand's extents with reduced axes kept as 1.
  static constexpr dims_t<std::size_t(SIn::rank)> kept_extents = [] {
    auto d = SIn::extents;
    for (std::size_t i = 0; i < d.size(); ++i) if (K::axes::mask[i]) d[i] = 1;
    return d;
  }();
  using SK = shape_of<kept_extents>;

  /// An expression of the reduced shape, broadcast back to the operand's extents.
  template <class X, class G> static auto spread(const X& x, const G& g) {
    const auto d = x.dims();
    auto kd = d;
    for (std::size_t i = 0; i < kd.size(); ++i) if (K::axes::mask[i]) kd[i] = 1;
    return broadcast_to<SIn>(reshape<SK>(G(g), kd), d);
  }

  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y& y) {
    const auto& x = operand<0>(n);
    if constexpr (std::is_same_v<Op<compute_t<T>>, ops::sum_op<compute_t<T>>>) {
      if constexpr (Mean) {
        std::size_t count = 1;
        const auto d = x.dims();
        for (std::size_t i = 0; i < d.size(); ++i) if (K::axes::mask[i]) count *= d[i];
        return spread(x, g) * (1.0 / double(count ? count : 1));
      } else {
        return spread(x, g);
      }
    } else if constexpr (std::is_same_v<Op<compute_t<T>>, ops::prod_op<compute_t<T>>>) {
      ops::prod_adjoint_op<T, SIn, std::size_t(shape_t<G>::rank)> k;
      k.out_dims = x.dims();
      for (std::size_t i = 0; i < k.reduced.size(); ++i) k.reduced[i] = K::axes::mask[i];
      return expr::make_computed(k, x, G(g));
    } else {  // max, min: split among ties
      auto hit = equal(x, spread(x, y));
      auto ties = ops::make_reduce<ops::sum_op, true, false, Axes...>(cast<T>(hit));
      const auto d = x.dims();
      return where(hit, spread(x, g) / broadcast_to<SIn>(ties, d), 0);
    }
  }
};

/// The adjoint of a broadcast adjoint: the sum back (sum_to's rule).
template <class T, class SG, class SO, class G0> struct rule<expr::Computed<ops::sum_to_op<T, SG, SO>, G0>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = true;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    return broadcast_to<SG>(G(g), operand<0>(n).dims());
  }
};

template <class T, class SIn, int Axis, class SOut, class OutT, class F, class E>
struct rule<expr::Computed<ops::along_axis_op<T, SIn, Axis, SOut, OutT, F>, E>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = std::is_same_v<F, ops::cumsum_fn> && is_floating_v<T>;
  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    auto k = n.k;
    k.f.reverse = !k.f.reverse;
    return expr::make_computed(k, G(g));
  }
};

}  // namespace ctflow::autodiff
