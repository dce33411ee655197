#pragma once
// The form of a gradient rule, and what rules share: bringing an adjoint back to the shape of an
// operand that was broadcast.
//
// `rule<N>` is specialised per node family (autodiff/rules/<family>.hpp). For operand I it says
// whether an adjoint flows there (`differentiable<I>`) and builds it: `vjp<I>(n, g, y)` takes the
// node, the adjoint g of its result and its value y (the node itself, or a view of it once the
// forward pass computed it), and returns an expression with the operand's shape. The rule of a
// saving kernel (expr/computed.hpp) has a second form, `vjp<I>(n, g, y, saved)`, which
// value_and_grad calls with the kernel's by-product; `grad`'s expressions use the first.

#include <array>
#include <cstddef>

#include <ctflow/ops/array.hpp>
#include <ctflow/ops/math.hpp>
#include <ctflow/ops/reduction.hpp>
#include <ctflow/autodiff/node.hpp>

namespace ctflow::autodiff {

template <class N> struct rule {
  template <std::size_t I> static constexpr bool differentiable = false;
  static constexpr bool known = false;
};

namespace detail {



// 0: the operand has the result's extents; 1: it may not (decided at run time); 2: it has not.
template <class SO, class SOther, class SG> constexpr int broadcast_kind() {
  constexpr int rg = SG::rank, ro = SO::rank, rt = SOther::rank;
  if (ro < rg) return 2;
  int kind = 0;
  for (int k = 0; k < rg; ++k) {
    const std::size_t a = SO::extents[std::size_t(k)];
    const int kt = k - (rg - rt);
    const std::size_t b = kt < 0 ? 1 : SOther::extents[std::size_t(kt)];
    if (a == 1) {
      if (b == dyn) kind = std::max(kind, 1);
      else if (b != 1) return 2;
    } else if (a == dyn && b != 1) {
      kind = std::max(kind, 1);
    }
  }
  return kind;
}

}  // namespace detail

/// The adjoint g of a broadcast result, brought back to operand `op` (broadcast against
/// operands of static shape SOther): g itself when no broadcasting can have happened, a sum
/// over the broadcast axes otherwise.
template <class SOther, class Op, class G> auto unbroadcast(const Op& op, const G& g) {
  static_assert(!is_owning_leaf<G>(), "adjoints are expressions or views, never owning tensors");
  using SO = shape_t<Op>;
  using SG = shape_t<G>;
  if constexpr (detail::broadcast_kind<SO, SOther, SG>() == 0) {
    return G(g);
  } else {
    ops::sum_to_op<value_t<G>, SG, SO> k;
    k.out_dims = op.dims();
    return expr::make_computed(k, G(g));
  }
}

}  // namespace ctflow::autodiff
