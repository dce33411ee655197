// tf.nn kernels against memory bandwidth and PyTorch (bench/peers/nn_torch.py, same run):
//  - sparse_xent: sparse softmax cross-entropy forward and backward (value_and_grad of the mean
//    loss with respect to the logits) over logits [1024, 1000] float32. Bytes counted: the logits
//    read forward, read again and the gradient written backward (3 x 4 MB). Goal: at least 80%
//    of the STREAM triad bandwidth (bench/triad.hpp, in this run).
//  - conv_fwd / conv_bwd_input / conv_bwd_filter: the Fashion-MNIST CNN's convolutions at batch
//    64 (28x28x1 -> 32, 3x3 VALID; 13x13x32 -> 64, 3x3 VALID) and a ResNet 3x3 convolution (batch
//    32, 56x56x64 -> 64, SAME), in GFLOP/s (2 * output * kh * kw * c per pass), on 2 threads.
//    Goals: at least 1.5x PyTorch on each; the ResNet forward at 70% of the FMA peak on 2 threads
//    (bench/fma_peak.hpp, in this run; 444 GFLOP/s at this machine's full clock).
//  - max_pool: max_pool2d forward and its gradient, the kernels value_and_grad runs (the forward
//    saving each window's position of its maximum, MaxPoolGradWithArgmax from those), over the
//    Fashion-MNIST CNN's first pooling (64x26x26x32, 2x2) and a ResNet stem pooling
//    (32x112x112x64, 3x3 stride 2 SAME), on 1 and 2 threads. Bytes counted, as for the kernels
//    that find the maxima again backward (MaxPoolGrad): x read and y written forward; x, y and dy
//    read and dx written backward (3 |x| + 3 |y|). Goal: at least 80% of triad bandwidth.
#include <benchmark/benchmark.h>

#include <ctflow/ctflow.hpp>

#include "fma_peak.hpp"
#include "triad.hpp"

using namespace ctflow;

namespace {

constexpr std::size_t rows = 1024, classes = 1000;

void sparse_xent(benchmark::State& s) {
  config::set_num_threads(int(s.range(0)));
  Tensor<float, Shape<rows, classes>> logits = random_normal<float, Shape<rows, classes>>(1, 0.0, 2.0);
  Tensor<std::int32_t, Shape<rows>> labels;
  for (std::size_t i = 0; i < rows; ++i) labels(i) = std::int32_t((i * 37) % classes);
  auto loss = reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
  for (auto _ : s) {
    auto [value, g] = value_and_grad(loss, logits);
    benchmark::DoNotOptimize(value);
    benchmark::DoNotOptimize(g.data());
  }
  ctflow_bench::count_bytes(s, 3.0 * rows * classes * sizeof(float));
}
BENCHMARK(ctflow_bench::triad)->Name("triad")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(sparse_xent)->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

template <std::size_t N, std::size_t H, std::size_t W, std::size_t C, std::size_t O, nn::padding P> struct conv_case {
  using SX = Shape<N, H, W, C>;
  using SF = Shape<3, 3, C, O>;
  static constexpr nn::detail::conv_options options{1, 1, 1, 1, P};
  Tensor<float, SX> x = random_normal<float, SX>(1, 0.0, 1.0);
  Tensor<float, SF> f = random_normal<float, SF>(2, 0.0, 0.1);
  using SY = shape_t<decltype(nn::conv2d<P>(x, f))>;
  Tensor<float, SY> dy = random_normal<float, SY>(3, 0.0, 1.0);
  nn::detail::conv_geometry g = nn::detail::make_geometry(x.dims(), f.dims(), 1, 1, 1, 1, P);
  static constexpr double flops = 2.0 * double(SY::static_size) * 9 * C;
};
using mnist_conv1 = conv_case<64, 28, 28, 1, 32, nn::VALID>;
using mnist_conv2 = conv_case<64, 13, 13, 32, 64, nn::VALID>;
using resnet_conv = conv_case<32, 56, 56, 64, 64, nn::SAME>;

/// range(0): 0 the forward pass, 1 Conv2DBackpropInput, 2 Conv2DBackpropFilter (the kernels
/// value_and_grad runs).
template <class Case> void conv(benchmark::State& s) {
  config::set_num_threads(2);
  static Case c;
  Tensor<float, typename Case::SY> y;
  Tensor<float, typename Case::SX> dx;
  Tensor<float, typename Case::SF> df;
  nn::detail::conv2d_backprop_input_op<float, typename Case::SX, typename Case::SF, Case::options> input_kernel{c.x.dims(), c.g};
  nn::detail::conv2d_backprop_filter_op<float, typename Case::SX, typename Case::SF, Case::options> filter_kernel{c.f.dims(), c.g};
  for (auto _ : s) {
    switch (s.range(0)) {
      case 0: y = nn::conv2d<Case::options.pad>(c.x, c.f); break;
      case 1: dx = expr::make_computed(input_kernel, c.dy, c.f); break;
      default: df = expr::make_computed(filter_kernel, c.x, c.dy); break;
    }
  }
  ctflow_bench::count_flops(s, Case::flops);
}
BENCHMARK(ctflow_bench::fma_peak)->Name("fma_peak")->Arg(2)->UseRealTime();
BENCHMARK(conv<mnist_conv1>)->Name("conv/mnist1")->DenseRange(0, 2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(conv<mnist_conv2>)->Name("conv/mnist2")->DenseRange(0, 2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(conv<resnet_conv>)->Name("conv/resnet")->DenseRange(0, 2)->UseRealTime()->Unit(benchmark::kMicrosecond);

template <std::size_t N, std::size_t H, std::size_t W, std::size_t C, std::size_t K, std::size_t S, nn::padding P> struct pool_case {
  using SX = Shape<N, H, W, C>;
  Tensor<float, SX> x = random_normal<float, SX>(4, 0.0, 1.0);
  using SY = shape_t<decltype(nn::max_pool2d<K, K, S, S, P>(x))>;
  Tensor<float, SY> dy = random_normal<float, SY>(5, 0.0, 1.0);
  static auto pool(const Tensor<float, SX>& t) { return nn::max_pool2d<K, K, S, S, P>(t); }
  static constexpr std::size_t k = K;
  static constexpr double bytes = 3.0 * double(SX::static_size + SY::static_size) * sizeof(float);
};
using mnist_pool = pool_case<64, 26, 26, 32, 2, 2, nn::VALID>;
using resnet_pool = pool_case<32, 112, 112, 64, 3, 2, nn::SAME>;

template <class Case> void max_pool(benchmark::State& s) {
  config::set_num_threads(int(s.range(0)));
  static Case c;
  auto node = Case::pool(c.x);
  Tensor<float, typename Case::SY> y;
  Tensor<typename decltype(node)::op_type::saved_type, typename Case::SY> positions;
  Tensor<float, typename Case::SX> dx;
  nn::detail::max_pool_argmax_grad_op<float, typename Case::SX, Case::k, Case::k> grad_kernel{c.x.dims(), node.k.g};
  for (auto _ : s) {
    backend::cpu::evaluator<decltype(node)> forward(node, y.data(), positions.data());
    dx = expr::make_computed(grad_kernel, c.dy, positions);
    benchmark::DoNotOptimize(dx.data());
  }
  ctflow_bench::count_bytes(s, Case::bytes);
}
BENCHMARK(max_pool<mnist_pool>)->Name("max_pool/mnist")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(max_pool<resnet_pool>)->Name("max_pool/resnet")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
