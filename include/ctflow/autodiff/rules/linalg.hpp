#pragma once
// matmul's gradient rule: two more matmuls on the same GEMM, with the transposes folded into
// the operand strides (no copy). Batch extents that were broadcast are summed back.

#include <ctflow/ops/linalg.hpp>
#include <ctflow/autodiff/rule.hpp>

namespace ctflow::autodiff {

template <class T, class SA, class SB, bool TA, bool TB, class A, class B>
struct rule<expr::Computed<ops::matmul_op<T, SA, SB, TA, TB>, A, B>> {
  static constexpr bool known = true;
  template <std::size_t I> static constexpr bool differentiable = is_floating_v<T>;

  // The other operand's batch extents followed by [1, 1]: what operand I was broadcast against.
  template <class SOther> static constexpr auto batch_of() {
    dims_t<std::size_t(SOther::rank)> d{};
    for (int i = 0; i < SOther::rank - 2; ++i) d[std::size_t(i)] = SOther::extents[std::size_t(i)];
    d[std::size_t(SOther::rank - 2)] = 1;
    d[std::size_t(SOther::rank - 1)] = 1;
    return d;
  }

  template <std::size_t I, class N, class G, class Y> static auto vjp(const N& n, const G& g, const Y&) {
    const auto& a = operand<0>(n);
    const auto& b = operand<1>(n);
    if constexpr (I == 0) {
      auto da = [&] {
        if constexpr (!TA && !TB) return matmul(G(g), b, transpose_b);
        else if constexpr (!TA && TB) return matmul(G(g), b);
        else if constexpr (TA && !TB) return matmul(b, G(g), transpose_b);
        else return matmul(b, G(g), transpose_a, transpose_b);
      }();
      return unbroadcast<shape_of<batch_of<SB>()>>(a, da);
    } else {
      auto db = [&] {
        if constexpr (!TA && !TB) return matmul(a, G(g), transpose_a);
        else if constexpr (!TA && TB) return matmul(G(g), a, transpose_a);
        else if constexpr (TA && !TB) return matmul(a, G(g));
        else return matmul(G(g), a, transpose_a, transpose_b);
      }();
      return unbroadcast<shape_of<batch_of<SA>()>>(b, db);
    }
  }
};

}  // namespace ctflow::autodiff
