// Loss and all gradients of an MLP 784-256-256-10 (relu, softmax cross-entropy written with
// ctflow ops) at batch 64: value_and_grad against a hand-written backward pass over the same
// kernels (matmul, fused element-wise loops, reductions) with preallocated buffers. The PyTorch
// peer (bench/peers/autodiff_torch.py) runs the same work; scripts/bench.sh prints the ratios.
#include <benchmark/benchmark.h>

#include <ctflow/ctflow.hpp>

using namespace ctflow;

namespace {

constexpr std::size_t B = 64, I = 784, H = 256, O = 10;

struct mlp {
  Tensor<float, Shape<B, I>> x = random_uniform<float, Shape<B, I>>(1, 0, 1);
  Tensor<std::int32_t, Shape<B>> y;
  Variable<float, Shape<I, H>> w1{random_normal<float, Shape<I, H>>(2, 0, 0.05), "w1"};
  Variable<float, Shape<H>> b1{zeros<float, Shape<H>>(), "b1"};
  Variable<float, Shape<H, H>> w2{random_normal<float, Shape<H, H>>(3, 0, 0.06), "w2"};
  Variable<float, Shape<H>> b2{zeros<float, Shape<H>>(), "b2"};
  Variable<float, Shape<H, O>> w3{random_normal<float, Shape<H, O>>(4, 0, 0.06), "w3"};
  Variable<float, Shape<O>> b3{zeros<float, Shape<O>>(), "b3"};
  mlp() { for (std::size_t i = 0; i < B; ++i) y(i) = std::int32_t(i % O); }

  auto loss() const {
    auto logits = matmul(relu(matmul(relu(matmul(x, w1) + b1), w2) + b2), w3) + b3;
    auto shifted = logits - stop_gradient(reduce_max<1>(logits, keepdims));
    return reduce_mean(log(reduce_sum<1>(exp(shifted))) - reduce_sum<1>(shifted * one_hot<O>(y)));
  }
};

void value_and_grad_mlp(benchmark::State& state) {
  config::set_num_threads(int(state.range(0)));
  mlp m;
  auto loss = m.loss();
  for (auto _ : state) {
    auto r = value_and_grad(loss, m.w1, m.b1, m.w2, m.b2, m.w3, m.b3);
    benchmark::DoNotOptimize(std::get<0>(r));
  }
}

/// The same loss and gradients written out by hand: forward activations kept in preallocated
/// tensors, softmax cross-entropy's adjoint in closed form, one matmul per weight gradient.
void handwritten_mlp(benchmark::State& state) {
  config::set_num_threads(int(state.range(0)));
  mlp m;
  Tensor<float, Shape<B, H>> z1, h1, z2, h2, d2, d1;
  Tensor<float, Shape<B, O>> logits, p, d3;
  Tensor<float, Shape<B, 1>> lse;
  Tensor<float, Shape<I, H>> g1;
  Tensor<float, Shape<H, H>> g2;
  Tensor<float, Shape<H, O>> g3;
  Tensor<float, Shape<H>> gb1, gb2;
  Tensor<float, Shape<O>> gb3;
  Tensor<float, Shape<B, O>> onehot = one_hot<O>(m.y);
  for (auto _ : state) {
    z1 = matmul(m.x, m.w1) + m.b1;
    h1 = relu(z1);
    z2 = matmul(h1, m.w2) + m.b2;
    h2 = relu(z2);
    logits = matmul(h2, m.w3) + m.b3;
    lse = reduce_max<1>(logits, keepdims);
    p = exp(logits - lse);
    lse = lse + log(reduce_sum<1>(p, keepdims));
    const float loss = eval(reduce_mean(reduce_sum<1>(onehot * (lse - logits))))();
    d3 = (exp(logits - lse) - onehot) * (1.f / B);
    g3 = matmul(h2, d3, transpose_a);
    gb3 = reduce_sum<0>(d3);
    d2 = where(z2 > 0.f, matmul(d3, m.w3, transpose_b), 0.f);
    g2 = matmul(h1, d2, transpose_a);
    gb2 = reduce_sum<0>(d2);
    d1 = where(z1 > 0.f, matmul(d2, m.w2, transpose_b), 0.f);
    g1 = matmul(m.x, d1, transpose_a);
    gb1 = reduce_sum<0>(d1);
    benchmark::DoNotOptimize(loss);
    benchmark::DoNotOptimize(g1.data());
  }
}

}  // namespace

BENCHMARK(value_and_grad_mlp)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(handwritten_mlp)->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_MAIN();
