// embedded::Sequential: the arena the compiler plans (where each activation lives, how large it
// is), and each embedded layer against the same ops evaluated on the reference device straight
// from their expressions, in networks as export_header writes them.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <vector>

#include <ctflow/backend/reference/reference.hpp>
#include <ctflow/embedded.hpp>

using namespace ctflow;
namespace activations = keras::activations;
using embedded::in_input;
using embedded::in_output;

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
  static_assert(Net::offsets == std::array<std::size_t, 7>{in_input, 0, 320, 0, 0, 320 + 256 - 64, in_output});
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
  static_assert(Net::offsets == std::array{in_input, in_output, in_output, in_output, in_output});
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

TEST_CASE("embedded: depthwise and strided same-padded convolutions, zero padding, the poolings, a permute, reshapes and log_softmax") {
  using Net = embedded::Sequential<embedded::Input<float, Shape<1, 7, 5, 4>>, embedded::ZeroPadding2D<1, 0, 2, 1>,
                                   embedded::DepthwiseConv2D<2, embedded::window{.kh = 3, .kw = 3, .sh = 2, .sw = 1, .padding = nn::SAME},
                                                             activations::relu6, weights::dw>,
                                   embedded::AveragePooling2D<embedded::window{.kh = 2, .kw = 2, .sh = 1, .sw = 2, .padding = nn::SAME}>,
                                   embedded::Permute<3, 1, 2>, embedded::Reshape<Shape<16, 8>>, embedded::Activation<activations::log_softmax>,
                                   embedded::Reshape<Shape<4, 4, 8>>, embedded::GlobalMaxPooling2D>;
  static_assert(std::is_same_v<Net::output_shape, Shape<1, 8>>);
  const auto x = input<Shape<1, 7, 5, 4>>(3, -2, 2);
  float y[8];
  Net::predict(x.data(), y);
  const TensorView<const float, Shape<3, 3, 4, 2>, reference> f(weights::dw);
  const Tensor<float, Shape<1, 8, 8, 4>, reference> padded = reshape<Shape<1, 8, 8, 4>>(pad(x, {{{0, 0}, {1, 0}, {2, 1}, {0, 0}}}), {1, 8, 8, 4});
  const Tensor<float, Shape<1, 4, 8, 8>, reference> conv = relu6(nn::depthwise_conv2d<nn::SAME, 2, 1>(padded, f));
  const Tensor<float, Shape<1, 4, 4, 8>, reference> pooled = nn::avg_pool2d<2, 2, 1, 2, nn::SAME>(conv);
  const Tensor<float, Shape<1, 8, 4, 4>, reference> permuted = transpose<0, 3, 1, 2>(pooled);
  const Tensor<float, Shape<1, 16, 8>, reference> logp = nn::log_softmax(reshape<Shape<1, 16, 8>>(permuted));
  const Tensor<float, Shape<1, 8>, reference> expected = nn::global_max_pool2d(reshape<Shape<1, 4, 4, 8>>(logp));
  for (int i = 0; i < 8; ++i) CHECK(y[i] == expected(0, i));
  // A Permute of int8 activations (between a Quantize and a Dequantize, as keras::quantize writes it).
  using Int8 = embedded::Sequential<embedded::Input<float, Shape<1, 2, 3, 4>>, embedded::Quantize<0.125, 3>, embedded::Permute<3, 1, 2>,
                                    embedded::Dequantize<0.125, 3>>;
  static_assert(std::is_same_v<Int8::output_shape, Shape<1, 4, 2, 3>>);
  const auto small = input<Shape<1, 2, 3, 4>>(4, -2, 2);
  float z[24];
  Int8::predict(small.data(), z);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 3; ++j)
      for (std::size_t c = 0; c < 4; ++c) {
        const float v = small(0, i, j, c);
        CHECK(z[(c * 2 + i) * 3 + j] == float(std::lround(v / 0.125f)) * 0.125f);
      }
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

TEST_CASE("embedded: a Model of nodes: a residual sum, a concatenation, each activation kept until its last reader") {
  constexpr embedded::window same3{.kh = 3, .kw = 3, .padding = nn::SAME};
  // 1 conv; 2 batch norm (memory of its own: 1 is read again by 4 and 6); 3 tanh and 4 the sum
  // over 2; 5 the depthwise conv; 6 its channels and 1's; 7 pooled; 8 squared over 7, the output.
  using Net = embedded::Model<embedded::Input<float, Shape<1, 6, 6, 2>>, embedded::Node<embedded::Conv2D<4, same3, activations::relu, weights::k1, weights::b1>, 0>,
                              embedded::Node<embedded::BatchNormalization<1e-3, weights::gamma, weights::beta, weights::mean, weights::variance>, 1>,
                              embedded::Node<embedded::Activation<activations::tanh>, 2>, embedded::Node<embedded::Add, 3, 1>,
                              embedded::Node<embedded::DepthwiseConv2D<2, same3, activations::linear, weights::dw>, 4>,
                              embedded::Node<embedded::Concatenate<-1>, 5, 1>, embedded::Node<embedded::GlobalAveragePooling2D, 6>,
                              embedded::Node<embedded::Multiply, 7, 7>>;
  static_assert(std::is_same_v<Net::output_shape, Shape<1, 12>>);
  // Activations of 576 B (1 to 4), 1152 (5), 1728 (6): 1, 5 and 6 live together; 2 at the
  // arena's top, away from 1; 5 after 1; 6 at the top, away from 5, where 2 was.
  static_assert(Net::offsets == std::array<std::size_t, 9>{in_input, 0, 2880, 2880, 2880, 576, 1728, in_output, in_output});
  static_assert(Net::activation_bytes == 576 + 1152 + 1728);
  static_assert(Net::count_params() == 72 + 4 + 16 + 72);

  const auto x = input<Shape<1, 6, 6, 2>>(5);
  float y[12];
  Net::predict(x.data(), y);
  const TensorView<const float, Shape<3, 3, 2, 4>, reference> k1(weights::k1);
  const TensorView<const float, Shape<4>, reference> b1(weights::b1), g(weights::gamma), b(weights::beta), m(weights::mean), v(weights::variance);
  const TensorView<const float, Shape<3, 3, 4, 2>, reference> f(weights::dw);
  const Tensor<float, Shape<1, 6, 6, 4>, reference> c1 = relu(nn::conv2d<nn::SAME>(x, k1) + b1);
  const Tensor<float, Shape<1, 6, 6, 4>, reference> sum = tanh(nn::batch_normalization(c1, m, v, b, g, 1e-3)) + c1;
  const Tensor<float, Shape<1, 6, 6, 8>, reference> d = nn::depthwise_conv2d<nn::SAME, 1, 1>(sum, f);
  const Tensor<float, Shape<1, 6, 6, 12>, reference> joined = concat<-1>(d, c1);
  const Tensor<float, Shape<1, 12>, reference> pooled = nn::global_avg_pool2d(joined);
  const Tensor<float, Shape<1, 12>, reference> expected = pooled * pooled;
  for (int i = 0; i < 12; ++i) CHECK(y[i] == expected(0, i));
}

TEST_CASE("embedded: merges broadcast as Keras's do, fold from the left, and leave the network's input unwritten") {
  // 1 the pooled [1, 2]; 2 the input less it (broadcast: memory of its own, the input is the
  // caller's); 3 and 4 the extremes over 2 (in place); 5 the mean of 4, 2 and the input.
  using Net = embedded::Model<embedded::Input<float, Shape<1, 3, 4, 2>>, embedded::Node<embedded::GlobalAveragePooling2D, 0>,
                              embedded::Node<embedded::Subtract, 0, 1>, embedded::Node<embedded::Maximum, 2, 0>, embedded::Node<embedded::Minimum, 3, 1>,
                              embedded::Node<embedded::Average, 4, 2, 0>>;
  static_assert(std::is_same_v<Net::output_shape, Shape<1, 3, 4, 2>>);
  // 2's memory is read by 5 through 2 itself after 3 and 4 would write it: 3 takes memory of its own.
  static_assert(Net::offsets[2] != Net::offsets[3]);
  static_assert(Net::offsets[3] == Net::offsets[4]);
  const auto x = input<Shape<1, 3, 4, 2>>(6, -2, 2);
  const Tensor<float, Shape<1, 3, 4, 2>, reference> before = x;
  float y[24];
  Net::predict(x.data(), y);
  const Tensor<float, Shape<1, 2>, reference> p = nn::global_avg_pool2d(x);
  const Tensor<float, Shape<1, 3, 4, 2>, reference> sub = x - p;
  const Tensor<float, Shape<1, 3, 4, 2>, reference> low = minimum(maximum(sub, x), p);
  const Tensor<float, Shape<1, 3, 4, 2>, reference> expected = (low + sub + x) / 3.f;
  for (int i = 0; i < 24; ++i) {
    CHECK(y[i] == expected.data()[i]);
    CHECK(x.data()[i] == before.data()[i]);
  }
}

namespace recurrent {
// Features 3, units 2: LSTM's 4 gates, GRU's 3.
alignas(64) inline constexpr float lstm_kernel[3 * 8] = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.2f, 0.6f, -0.1f, 0.2f, 0.4f, -0.3f, 0.7f,
                                                        0.1f, -0.5f, 0.3f, 0.2f, -0.6f, 0.1f, 0.4f, 0.3f, -0.2f, 0.5f, 0.1f, -0.3f};
alignas(64) inline constexpr float lstm_recurrent[2 * 8] = {0.2f, 0.1f, -0.3f, 0.4f, 0.5f, -0.2f, 0.1f, 0.3f, -0.1f, 0.6f, 0.2f, -0.4f, 0.3f, 0.1f, -0.5f, 0.2f};
alignas(64) inline constexpr float lstm_bias[8] = {0.1f, -0.1f, 1.0f, 1.0f, 0.05f, -0.2f, 0.3f, 0.0f};
alignas(64) inline constexpr float gru_kernel[3 * 6] = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.2f, 0.6f, -0.1f, 0.2f, 0.4f, -0.3f, 0.7f, 0.1f, -0.5f, 0.3f, 0.2f, -0.6f, 0.1f};
alignas(64) inline constexpr float gru_recurrent[2 * 6] = {0.2f, 0.1f, -0.3f, 0.4f, 0.5f, -0.2f, -0.1f, 0.6f, 0.2f, -0.4f, 0.3f, 0.1f};
alignas(64) inline constexpr float gru_bias_after[2 * 6] = {0.1f, -0.1f, 0.2f, 0.0f, 0.3f, -0.2f, 0.05f, 0.1f, -0.3f, 0.2f, 0.0f, 0.4f};
alignas(64) inline constexpr float gru_bias_before[6] = {0.1f, -0.1f, 0.2f, 0.0f, 0.3f, -0.2f};

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
// z[g * units + j] = x_t @ kernel + h @ recurrent (+ bias) of gate g, unit j, in doubles.
std::vector<double> products(const float* kernel, const float* recurrent, std::size_t gates, const float* x, const std::vector<double>& h) {
  const std::size_t units = h.size(), n = gates * units;
  std::vector<double> z(2 * n, 0.0);  // the input's, then the state's
  for (std::size_t c = 0; c < n; ++c) {
    for (std::size_t f = 0; f < 3; ++f) z[c] += double(x[f]) * kernel[f * n + c];
    for (std::size_t k = 0; k < units; ++k) z[n + c] += h[k] * recurrent[k * n + c];
  }
  return z;
}
// Keras's LSTM and GRU cells step by step over [batch, steps, 3], every step's state kept.
std::vector<double> lstm(const float* x, std::size_t batch, std::size_t steps, bool backwards) {
  std::vector<double> out;
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<double> h(2, 0.0), c(2, 0.0);
    for (std::size_t t = 0; t < steps; ++t) {
      const auto z = products(lstm_kernel, lstm_recurrent, 4, x + (b * steps + (backwards ? steps - 1 - t : t)) * 3, h);
      for (std::size_t j = 0; j < 2; ++j) {
        const auto gate = [&](std::size_t g) { return z[g * 2 + j] + z[8 + g * 2 + j] + lstm_bias[g * 2 + j]; };
        c[j] = sigmoid(gate(1)) * c[j] + sigmoid(gate(0)) * std::tanh(gate(2));
        h[j] = sigmoid(gate(3)) * std::tanh(c[j]);
      }
      out.insert(out.end(), h.begin(), h.end());
    }
  }
  return out;
}
std::vector<double> gru(const float* x, std::size_t batch, std::size_t steps, bool reset_after) {
  std::vector<double> out;
  for (std::size_t b = 0; b < batch; ++b) {
    std::vector<double> h(2, 0.0);
    for (std::size_t t = 0; t < steps; ++t) {
      const auto z = products(gru_kernel, gru_recurrent, 3, x + (b * steps + t) * 3, h);
      std::vector<double> next(2);
      for (std::size_t j = 0; j < 2; ++j) {
        const float* bias = reset_after ? gru_bias_after : gru_bias_before;
        const auto input = [&](std::size_t g) { return z[g * 2 + j] + bias[g * 2 + j]; };
        const auto state = [&](std::size_t g) { return z[6 + g * 2 + j] + (reset_after ? gru_bias_after[6 + g * 2 + j] : 0.0); };
        const double u = sigmoid(input(0) + state(0)), r = sigmoid(input(1) + state(1));
        double candidate;
        if (reset_after) {
          candidate = std::tanh(input(2) + r * state(2));
        } else {
          double s = 0;
          for (std::size_t k = 0; k < 2; ++k) {
            const double rk = sigmoid(z[2 + k] + bias[2 + k] + z[6 + 2 + k]);  // r of unit k
            s += rk * h[k] * gru_recurrent[k * 6 + 4 + j];
          }
          candidate = std::tanh(input(2) + s);
        }
        next[j] = u * h[j] + (1 - u) * candidate;
      }
      h = next;
      out.insert(out.end(), h.begin(), h.end());
    }
  }
  return out;
}
}  // namespace recurrent

TEST_CASE("embedded: LSTM and GRU step as Keras's cells: every step or the last, backwards, the reset gate after or before") {
  using activations::sigmoid;
  using activations::tanh;
  constexpr std::size_t batch = 2, steps = 4;
  const auto x = input<Shape<batch, steps, 3>>(7, -1.5, 1.5);
  const auto check = [&](const float* y, const std::vector<double>& every, bool sequences) {
    for (std::size_t b = 0; b < batch; ++b)
      for (std::size_t t = sequences ? 0 : steps - 1; t < steps; ++t)
        for (std::size_t j = 0; j < 2; ++j) {
          const float got = sequences ? y[(b * steps + t) * 2 + j] : y[b * 2 + j];
          CHECK(got == Approx(every[(b * steps + t) * 2 + j]).margin(2e-6));
        }
  };
  {
    using Net = embedded::Sequential<embedded::Input<float, Shape<batch, steps, 3>>,
                                     embedded::LSTM<2, tanh, sigmoid, embedded::recurrence{.return_sequences = true}, recurrent::lstm_kernel,
                                                    recurrent::lstm_recurrent, recurrent::lstm_bias>>;
    static_assert(std::is_same_v<Net::output_shape, Shape<batch, steps, 2>>);
    static_assert(Net::scratch_bytes == 3 * 64);  // the two products and the cell state
    static_assert(Net::count_params() == 24 + 16 + 8);
    float y[batch * steps * 2];
    Net::predict(x.data(), y);
    check(y, recurrent::lstm(x.data(), batch, steps, false), true);
  }
  {
    using Net = embedded::Sequential<embedded::Input<float, Shape<batch, steps, 3>>,
                                     embedded::LSTM<2, tanh, sigmoid, embedded::recurrence{.go_backwards = true}, recurrent::lstm_kernel,
                                                    recurrent::lstm_recurrent, recurrent::lstm_bias>>;
    static_assert(std::is_same_v<Net::output_shape, Shape<batch, 2>>);
    float y[batch * 2];
    Net::predict(x.data(), y);
    check(y, recurrent::lstm(x.data(), batch, steps, true), false);
  }
  for (const bool after : {true, false}) {
    float y[batch * steps * 2], last[batch * 2];
    if (after) {
      embedded::Sequential<embedded::Input<float, Shape<batch, steps, 3>>,
                           embedded::GRU<2, tanh, sigmoid, embedded::recurrence{.return_sequences = true}, recurrent::gru_kernel, recurrent::gru_recurrent,
                                         recurrent::gru_bias_after>>::predict(x.data(), y);
      embedded::Sequential<embedded::Input<float, Shape<batch, steps, 3>>,
                           embedded::GRU<2, tanh, sigmoid, embedded::recurrence{}, recurrent::gru_kernel, recurrent::gru_recurrent, recurrent::gru_bias_after>>::
          predict(x.data(), last);
    } else {
      embedded::Sequential<embedded::Input<float, Shape<batch, steps, 3>>,
                           embedded::GRU<2, tanh, sigmoid, embedded::recurrence{.return_sequences = true, .reset_after = false}, recurrent::gru_kernel,
                                         recurrent::gru_recurrent, recurrent::gru_bias_before>>::predict(x.data(), y);
      embedded::Sequential<embedded::Input<float, Shape<batch, steps, 3>>,
                           embedded::GRU<2, tanh, sigmoid, embedded::recurrence{.reset_after = false}, recurrent::gru_kernel, recurrent::gru_recurrent,
                                         recurrent::gru_bias_before>>::predict(x.data(), last);
    }
    const auto expected = recurrent::gru(x.data(), batch, steps, after);
    check(y, expected, true);
    check(last, expected, false);
  }
}
