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

#include "../ops/array.hpp"
#include "../ops/math.hpp"
#include "../ops/reduction.hpp"
#include "node.hpp"

namespace ctflow::autodiff {

template <class N> struct rule {
  template <std::size_t I> static constexpr bool differentiable = false;
  static constexpr bool known = false;
};

template <class N> inline constexpr bool has_rule_v = rule<std::remove_cvref_t<N>>::known;

namespace detail {

/// Sums g (extents of a broadcast result, rank RG) down to the operand's extents (rank RO):
/// leading axes it lacks and axes where it has extent 1.
template <class T, class SG, class SO> struct sum_to_kernel {
  using value_type = T;
  using shape_type = SO;
  static constexpr std::size_t RG = std::size_t(SG::rank), RO = std::size_t(SO::rank);
  dims_t<RO> out_dims{};
  void run(T* out, const expr::strided_view<T, RG>& g) const {
    std::array<bool, RG> reduced{};
    bool any = false;
    for (std::size_t k = 0; k < RG; ++k) {
      reduced[k] = k < RG - RO || (out_dims[k - (RG - RO)] == 1 && g.dims[k] != 1);
      any = any || (reduced[k] && g.dims[k] != 1);
    }
    if (!any) { std::copy_n(g.data, product(out_dims), out); return; }
    ops::reduce_into<ops::sum_op>(out, g.data, g.dims, reduced.data(), false);
  }
};

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
    detail::sum_to_kernel<value_t<G>, SG, SO> k;
    k.out_dims = op.dims();
    return expr::make_computed(k, G(g));
  }
}

}  // namespace ctflow::autodiff
