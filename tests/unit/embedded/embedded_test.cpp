// embedded::Sequential: the arena the compiler plans (where each activation lives, how large it
// is), and each embedded layer against the same ops evaluated on the reference device straight
// from their expressions, in networks as export_header writes them.
#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include <ctflow/backend/reference/reference.hpp>
#include <ctflow/embedded.hpp>

using namespace ctflow;
namespace activations = keras::activations;
using embedded::detail::slot;

namespace weights {
alignas(64) inline constexpr float k1[3 * 3 * 2 * 4] = {0.1f,  -0.2f, 0.3f,  0.4f,  -0.5f, 0.6f,  0.7f, -0.8f, 0.9f, 0.1f,  0.2f, -0.3f,
                                                        0.4f,  0.5f,  -0.6f, 0.7f,  0.8f,  -0.9f, 0.1f, 0.2f,  0.3f, -0.4f, 0.5f, 0.6f,
                                                        -0.7f, 0.8f,  0.9f,  -0.1f, 0.2f,  0.3f,  0.4f, -0.5f, 0.6f, 0.7f,  0.8f, -0.9f,
                                                        0.1f,  0.2f,  -0.3f, 0.4f,  0.5f,  0.6f,  0.7f, 0.8f,  0.9f, -0.1f, 0.2f, 0.3f,
                                                        0.4f,  0.5f,  0.6f,  -0.7f, 0.8f,  0.9f,  0.1f, 0.2f,  0.3f, 0.4f,  0.5f, 0.6f,
                                                        0.7f,  -0.8f, 0.9f,  0.1f,  0.2f,  0.3f,  0.4f, 0.5f,  0.6f, 0.7f,  0.8f, 0.9f};
alignas(64) inline constexpr float b1[4] = {0.05f, -0.1f, 0.15f, 0.2f};
alignas(64) inline constexpr float k2[16 * 5] = {
    0.3f,  -0.1f, 0.2f,  0.5f,  -0.4f, 0.1f,  0.6f,  -0.2f, 0.3f,  0.2f,  -0.5f, 0.4f,  0.1f,  0.2f,  -0.3f, 0.6f,  0.1f,  0.2f,  -0.1f, 0.3f,
    0.2f,  -0.4f, 0.5f,  0.1f,  0.3f,  0.1f,  0.2f,  -0.6f, 0.4f,  0.5f,  -0.2f, 0.3f,  0.1f,  0.4f,  -0.1f, 0.2f,  0.5f,  -0.3f, 0.2f,  0.1f,
    0.4f,  0.1f,  -0.2f, 0.3f,  0.6f,  -0.1f, 0.2f,  0.4f,  -0.5f, 0.3f,  0.2f,  0.1f,  0.3f,  -0.2f, 0.4f,  0.5f,  -0.1f, 0.2f,  0.3f,  -0.4f,
    0.1f,  0.6f,  -0.3f, 0.2f,  0.1f,  0.4f,  -0.2f, 0.3f,  0.5f,  -0.1f, 0.2f,  0.3f,  -0.4f, 0.1f,  0.6f,  -0.2f, 0.3f,  0.4f,  0.1f,  -0.5f};
alignas(64) inline constexpr float b2[5] = {0.1f, 0.2f, -0.3f, 0.4f, 0.0f};
alignas(64) inline constexpr float gamma[4] = {1.5f, 0.5f, 1.0f, 2.0f};
alignas(64) inline constexpr float beta[4] = {0.1f, -0.2f, 0.3f, 0.0f};
alignas(64) inline constexpr float mean[4] = {0.2f, -0.1f, 0.0f, 0.3f};
alignas(64) inline constexpr float variance[4] = {1.0f, 0.5f, 2.0f, 0.25f};
alignas(64) inline constexpr float dw[3 * 3 * 4 * 2] = {
    0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.1f, 0.2f, 0.3f, 0.4f,  0.5f,  0.6f, -0.7f, 0.8f, 0.1f, -0.2f,
    0.3f, 0.4f, 0.5f,  0.6f, 0.7f, -0.8f, 0.1f, 0.2f, 0.3f,  0.4f, 0.5f, -0.6f, 0.7f,  0.8f, 0.1f,  0.2f, 0.3f, 0.4f,
    0.5f, 0.6f, 0.7f,  0.8f, 0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, 0.8f,  -0.1f, 0.2f, 0.3f,  0.4f, 0.5f, 0.6f,
    0.7f, 0.8f, 0.1f,  0.2f, 0.3f, 0.4f,  0.5f, 0.6f, 0.7f,  0.8f, 0.1f, 0.2f,  0.3f,  0.4f, 0.5f,  0.6f, 0.7f, 0.8f};
}  // namespace weights

constexpr embedded::window conv3{.kh = 3, .kw = 3};
constexpr embedded::window pool2{.kh = 2, .kw = 2, .sh = 2, .sw = 2};

template <class S> Tensor<float, S, reference> input(std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random_uniform<float, S, reference>(seed, lo, hi);
}

TEST_CASE("embedded: the arena: each layer's input and output at the arena's two ends, the network's output the caller's") {
  // Rescaling (in place, but its input is the caller's: the low end), the convolution (the high
  // end), pooling (low), Flatten (its input's memory), Dense (high), softmax (memory of its own:
  // the caller's output).
  using Net = embedded::Sequential<embedded::Input<float, Shape<1, 6, 6, 2>>, embedded::Rescaling<0.5>,
                                   embedded::Conv2D<4, conv3, activations::relu, weights::k1, weights::b1>, embedded::MaxPooling2D<pool2>,
                                   embedded::Flatten, embedded::Dense<5, activations::linear, weights::k2, weights::b2>,
                                   embedded::Activation<activations::softmax>>;
  static_assert(Net::slots == std::array{slot::input, slot::low, slot::high, slot::low, slot::low, slot::high, slot::output});
  // Activations, each 64-byte aligned: 288 B (the input), 288 -> 320 (rescaled), 256 (conv
  // [1,4,4,4]), 64 (pooled), 64, 20 -> 64; the largest pair the rescaled input and the conv's.
  static_assert(Net::activation_bytes == 320 + 256);
  static_assert(Net::scratch_bytes == 2 * 64);  // the softmax's row maximum and sum
  static_assert(Net::arena_bytes == 320 + 256 + 128);
  static_assert(Net::count_params() == 72 + 4 + 80 + 5);
  static_assert(std::is_same_v<Net::output_shape, Shape<1, 5>>);

  const auto x = input<Shape<1, 6, 6, 2>>(1);
  float y[5];
  Net::predict(x.data(), y);
  const TensorView<const float, Shape<3, 3, 2, 4>, reference> k1(weights::k1);
  const TensorView<const float, Shape<4>, reference> b1(weights::b1);
  const TensorView<const float, Shape<16, 5>, reference> k2(weights::k2);
  const TensorView<const float, Shape<5>, reference> b2(weights::b2);
  const Tensor<float, Shape<1, 4, 4, 4>, reference> conv = relu(nn::conv2d<nn::VALID>(x * 0.5f, k1) + b1);
  const Tensor<float, Shape<1, 16>, reference> flat = reshape<Shape<1, 16>>(nn::max_pool2d<2>(conv));
  const Tensor<float, Shape<1, 5>, reference> expected = nn::softmax(matmul(flat, k2) + b2);
  for (int i = 0; i < 5; ++i) CHECK(y[i] == expected(0, i));  // the same ops in the same order: bitwise
}

TEST_CASE("embedded: an element-wise layer writes over its input, and views and in-place layers at the end write the caller's output") {
  // BatchNormalization and Activation(tanh) over the convolution's output where it lies; the
  // convolution writes the caller's output, which Flatten then reads.
  using Net = embedded::Sequential<embedded::Input<float, Shape<2, 6, 6, 2>>, embedded::Conv2D<4, conv3, activations::linear, weights::k1>,
                                   embedded::BatchNormalization<1e-3, weights::gamma, weights::beta, weights::mean, weights::variance>,
                                   embedded::Activation<activations::tanh>, embedded::Flatten>;
  static_assert(Net::slots == std::array{slot::input, slot::output, slot::output, slot::output, slot::output});
  static_assert(Net::arena_bytes == 0);
  const auto x = input<Shape<2, 6, 6, 2>>(2);
  std::vector<float> y(2 * 64);
  Net::predict(x.data(), y.data());
  const TensorView<const float, Shape<3, 3, 2, 4>, reference> k1(weights::k1);
  const TensorView<const float, Shape<4>, reference> g(weights::gamma), b(weights::beta), m(weights::mean), v(weights::variance);
  const Tensor<float, Shape<2, 4, 4, 4>, reference> conv = nn::conv2d<nn::VALID>(x, k1);
  const Tensor<float, Shape<2, 4, 4, 4>, reference> expected = tanh(nn::batch_normalization(conv, m, v, b, g, 1e-3));
  for (std::size_t i = 0; i < y.size(); ++i) CHECK(y[i] == expected.data()[i]);
}

TEST_CASE("embedded: depthwise and strided same-padded convolutions, zero padding, the poolings, reshapes and log_softmax") {
  using Net = embedded::Sequential<embedded::Input<float, Shape<1, 7, 5, 4>>, embedded::ZeroPadding2D<1, 0, 2, 1>,
                                   embedded::DepthwiseConv2D<2, embedded::window{.kh = 3, .kw = 3, .sh = 2, .sw = 1, .padding = nn::SAME},
                                                             activations::relu6, weights::dw>,
                                   embedded::AveragePooling2D<embedded::window{.kh = 2, .kw = 2, .sh = 1, .sw = 2, .padding = nn::SAME}>,
                                   embedded::Reshape<Shape<16, 8>>, embedded::Activation<activations::log_softmax>,
                                   embedded::Reshape<Shape<4, 4, 8>>, embedded::GlobalMaxPooling2D>;
  static_assert(std::is_same_v<Net::output_shape, Shape<1, 8>>);
  const auto x = input<Shape<1, 7, 5, 4>>(3, -2, 2);
  float y[8];
  Net::predict(x.data(), y);
  const TensorView<const float, Shape<3, 3, 4, 2>, reference> f(weights::dw);
  const Tensor<float, Shape<1, 8, 8, 4>, reference> padded = reshape<Shape<1, 8, 8, 4>>(pad(x, {{{0, 0}, {1, 0}, {2, 1}, {0, 0}}}), {1, 8, 8, 4});
  const Tensor<float, Shape<1, 4, 8, 8>, reference> conv = relu6(nn::depthwise_conv2d<nn::SAME, 2, 1>(padded, f));
  const Tensor<float, Shape<1, 4, 4, 8>, reference> pooled = nn::avg_pool2d<2, 2, 1, 2, nn::SAME>(conv);
  const Tensor<float, Shape<1, 16, 8>, reference> logp = nn::log_softmax(reshape<Shape<1, 16, 8>>(pooled));
  const Tensor<float, Shape<1, 8>, reference> expected = nn::global_max_pool2d(reshape<Shape<1, 4, 4, 8>>(logp));
  for (int i = 0; i < 8; ++i) CHECK(y[i] == expected(0, i));
}

TEST_CASE("embedded: the network's arena or the caller's, and views of device memory") {
  using Net = embedded::Sequential<embedded::Input<float, Shape<1, 6, 6, 2>>, embedded::Conv2D<4, conv3, activations::relu, weights::k1, weights::b1>,
                                   embedded::MaxPooling2D<pool2>, embedded::Flatten, embedded::Dense<5, activations::sigmoid, weights::k2>>;
  static_assert(Net::arena_bytes == 256 + 64);
  const auto x = input<Shape<1, 6, 6, 2>>(4);
  float own[5], given[5];
  Net::predict(x.data(), own);
  alignas(64) std::byte arena[Net::arena_bytes];
  Tensor<float, Shape<1, 5>, reference> out;
  Net::predict<reference>(TensorView<const float, Shape<1, 6, 6, 2>, reference>(x), TensorView<float, Shape<1, 5>, reference>(out), arena);
  Net::predict(x.data(), given, arena);
  for (int i = 0; i < 5; ++i) {
    CHECK(own[i] == given[i]);
    CHECK(own[i] == out(0, i));
  }
}
