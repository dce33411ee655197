// A Debug build (-O0) for AVX-512BW compiles: GCC 12's unoptimised AVX-512BW blends, which xsimd
// reaches for every select of integers and inside its float math, take xsimd's batches
// (backend/cpu/simd.hpp). The test builds this with -fsyntax-only, so that it needs no AVX-512 CPU.
#include <cstdint>

#include <ctflow/ctflow.hpp>

int main() {
  using namespace ctflow;
  const auto x = random_uniform<float, Shape<4, 40>>(1, -1.0, 1.0);
  const Tensor<std::int32_t, Shape<4, 40>> i = cast<std::int32_t>(x * 10.f);
  const Tensor<std::int32_t, Shape<4, 40>> i2 = where(i > 3, i, i * 2);
  const Tensor<std::int64_t, Shape<4, 40>> l = where(cast<std::int64_t>(i2) < std::int64_t(0), std::int64_t(0), cast<std::int64_t>(i2));
  const Tensor<float, Shape<4, 40>> y = where(x > 0.f, log(x + 1.f) + exp(x) + tanh(x) + sin(x) + pow(x * x, 0.5f), maximum(x, -0.5f));
  const Tensor<float, Shape<4>> s = reduce_sum<1>(y);
  const auto [v, g] = value_and_grad(reduce_sum(where(x > 0.f, log(x + 2.f), x * x)), x);
  return int(item(reduce_sum(l)) + std::int64_t(s(0) + v + g(0, 0)) > 1 << 30);
}
