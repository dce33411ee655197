#pragma once
// The reference kernel of matmul: for each batch and each (i, j), the sum over p of a[i, p] b[p, j]
// in one loop (double for floating dtypes, the compute type otherwise).

#include <array>
#include <cstddef>
#include <type_traits>

#include <ctflow/backend/reference/kernel.hpp>
#include <ctflow/core/dtype.hpp>
#include <ctflow/ops/linalg.hpp>

namespace ctflow::backend::reference {

/// [batch..., M, N] = a [..., M, K] x b [..., K, N] (a's and b's last two axes swapped with TA
/// and TB); batch axes align from the right, an operand's missing axes and axes of extent 1
/// broadcast.
template <class T, class SA, class SB, bool TA, bool TB> struct kernel<ops::matmul_op<T, SA, SB, TA, TB>> : ops::matmul_op<T, SA, SB, TA, TB> {
  using op = ops::matmul_op<T, SA, SB, TA, TB>;
  using op::R, op::RA, op::RB, op::out_dims;
  void run(T* out, const expr::strided_view<T, std::size_t(RA)>& a, const expr::strided_view<T, std::size_t(RB)>& b) const {
    using A = std::conditional_t<is_floating_v<T>, double, compute_t<T>>;
    const auto sa = row_major_strides(a.dims);
    const auto sb = row_major_strides(b.dims);
    const std::size_t m = out_dims[std::size_t(R - 2)], n = out_dims[std::size_t(R - 1)];
    const std::size_t k = a.dims[std::size_t(TA ? RA - 2 : RA - 1)];
    // a[i, p] and b[p, j] of a batch: row and column strides, transposes swapping them.
    const std::ptrdiff_t ai = sa[std::size_t(TA ? RA - 1 : RA - 2)], ap = sa[std::size_t(TA ? RA - 2 : RA - 1)];
    const std::ptrdiff_t bp = sb[std::size_t(TB ? RB - 1 : RB - 2)], bj = sb[std::size_t(TB ? RB - 2 : RB - 1)];
    std::size_t batches = 1;
    for (int i = 0; i < R - 2; ++i) batches *= out_dims[std::size_t(i)];
    std::array<std::size_t, std::size_t(R)> idx{};  // the batch's index; its last two stay 0
    for (std::size_t bi = 0; bi < batches; ++bi) {
      std::ptrdiff_t oa = 0, ob = 0;
      for (int i = 0; i < R - 2; ++i) {
        const int ia = i - (R - RA), ib = i - (R - RB);
        if (ia >= 0 && a.dims[std::size_t(ia)] != 1) oa += std::ptrdiff_t(idx[std::size_t(i)]) * sa[std::size_t(ia)];
        if (ib >= 0 && b.dims[std::size_t(ib)] != 1) ob += std::ptrdiff_t(idx[std::size_t(i)]) * sb[std::size_t(ib)];
      }
      for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
          A s(0);
          for (std::size_t p = 0; p < k; ++p)
            s += A(a.data[oa + std::ptrdiff_t(i) * ai + std::ptrdiff_t(p) * ap]) * A(b.data[ob + std::ptrdiff_t(p) * bp + std::ptrdiff_t(j) * bj]);
          out[(bi * m + i) * n + j] = T(s);
        }
      for (int i = R - 3; i >= 0; --i) {
        if (++idx[std::size_t(i)] < out_dims[std::size_t(i)]) break;
        idx[std::size_t(i)] = 0;
      }
    }
  }
};

}  // namespace ctflow::backend::reference
