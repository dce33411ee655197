#pragma once
// The CPU kernel of matmul: the packed GEMM of gemm.hpp, fully unrolled tiles for small static
// sizes, a plain loop for integer and 16-bit dtypes.

#include <ctflow/backend/cpu/evaluator.hpp>
#include <ctflow/backend/cpu/gemm.hpp>
#include <ctflow/ops/linalg.hpp>

namespace ctflow::backend::cpu {

template <class T, class SA, class SB, bool TA, bool TB> struct kernel<ops::matmul_op<T, SA, SB, TA, TB>> : ops::matmul_op<T, SA, SB, TA, TB> {
  using op = ops::matmul_op<T, SA, SB, TA, TB>;
  using op::KA, op::M, op::N, op::R, op::RA, op::RB, op::out_dims;
  /// Operands are read through their strides (a transposed operand is not copied).
  static constexpr bool strided_operands = true;
  /// Products of small static sizes run with their sizes as constants (inference shapes).
  static constexpr bool small_static = M != dyn && KA != dyn && N != dyn && M <= 16 && N <= 4 * lanes<T> && KA <= 256;
  void run(T* out, const expr::strided_view<T, std::size_t(RA)>& a, const expr::strided_view<T, std::size_t(RB)>& b) const {
    const std::size_t m = out_dims[std::size_t(R - 2)], n = out_dims[std::size_t(R - 1)];
    const std::size_t k = a.dims[std::size_t(TA ? RA - 2 : RA - 1)];
    const std::ptrdiff_t rsa = a.strides[std::size_t(RA - (TA ? 1 : 2))], csa = a.strides[std::size_t(RA - (TA ? 2 : 1))];
    const std::ptrdiff_t rsb = b.strides[std::size_t(RB - (TB ? 1 : 2))], csb = b.strides[std::size_t(RB - (TB ? 2 : 1))];
    std::size_t batches = 1;
    for (int i = 0; i < R - 2; ++i) batches *= out_dims[std::size_t(i)];
    for (std::size_t bi = 0; bi < batches; ++bi) {
      // Offsets of this batch in A and B, broadcasting batch extents of 1 (and missing axes).
      std::ptrdiff_t oa = 0, ob = 0;
      for (int i = R - 3, rem = int(bi); i >= 0; --i) {
        const std::size_t idx = std::size_t(rem) % out_dims[std::size_t(i)];
        rem /= int(out_dims[std::size_t(i)]);
        const int ia = i - (R - RA), ib = i - (R - RB);
        if (ia >= 0 && a.dims[std::size_t(ia)] != 1) oa += std::ptrdiff_t(idx) * a.strides[std::size_t(ia)];
        if (ib >= 0 && b.dims[std::size_t(ib)] != 1) ob += std::ptrdiff_t(idx) * b.strides[std::size_t(ib)];
      }
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        if constexpr (small_static) {
          if (csa == 1 && rsa == std::ptrdiff_t(KA) && csb == 1 && rsb == std::ptrdiff_t(N)) {
            gemm::small_static<T, M, KA, N>(a.data + oa, b.data + ob, out + bi * m * n);
            continue;
          }
        }
        gemm::gemm(m, n, k, a.data + oa, rsa, csa, b.data + ob, rsb, csb, out + bi * m * n, std::ptrdiff_t(n));
      } else {
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            compute_t<T> s(0);
            for (std::size_t p = 0; p < k; ++p)
              s += compute_t<T>(a.data[oa + std::ptrdiff_t(i) * rsa + std::ptrdiff_t(p) * csa]) *
                   compute_t<T>(b.data[ob + std::ptrdiff_t(p) * rsb + std::ptrdiff_t(j) * csb]);
            out[bi * m * n + i * n + j] = T(s);
          }
      }
    }
  }
};

}  // namespace ctflow::backend::cpu
