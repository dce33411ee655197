// Keras models on a device other than cpu: a Sequential whose Input names the reference device
// builds its weights there, and its calls and backward passes run there; with the same weights
// it gives the cpu device's outputs and gradients.
#include "devices_check.hpp"

using namespace ctflow;
namespace layers = keras::layers;
namespace activations = keras::activations;
using devices_check::largest_difference;
using devices_check::same_models;
using devices_check::same_on_both;

namespace {

template <class D>
using Net = keras::Sequential<keras::Input<float, Shape<8, 8, 2>, dyn, D>, layers::Conv2D<4, 3, activations::relu>, layers::MaxPooling2D<>,
                              layers::BatchNormalization, layers::Flatten, layers::Dense<16, activations::tanh>, layers::Dropout, layers::Dense<3>>;

template <class D>
using Images = keras::Sequential<keras::Input<float, Shape<6, 6, 3>, dyn, D>, layers::ZeroPadding2D<>, layers::DepthwiseConv2D<3, layers::depth_multiplier<2>>,
                                 layers::SeparableConv2D<4, 3, layers::same>, layers::Conv2DTranspose<3, 2, layers::strides<2>>, layers::AveragePooling2D<2>,
                                 layers::UpSampling2D<>, layers::Conv2D<4, 3, layers::strides<2>>, layers::LayerNormalization, layers::Rescaling,
                                 layers::LeakyReLU, layers::GlobalAveragePooling2D, layers::Dense<5>, layers::Softmax<>>;
template <class D>
using Pooled = keras::Sequential<keras::Input<float, Shape<6, 6, 3>, dyn, D>, layers::Conv2D<4, 3, activations::tanh, layers::same>, layers::ReLU,
                                 layers::GlobalMaxPooling2D, layers::Activation<activations::sigmoid>, layers::Reshape<Shape<2, 2>>, layers::Flatten, layers::Dense<2>>;
template <class D>
using Tokens = keras::Sequential<keras::Input<std::int32_t, Shape<7>, dyn, D>, layers::Embedding<12, 5>, layers::Conv1D<6, 2>, layers::LSTM<4, layers::return_sequences<true>>,
                                 layers::GRU<3, layers::go_backwards<true>>, layers::Dense<2>>;
template <class D>
using Steps = keras::Sequential<keras::Input<float, Shape<5, 3>, dyn, D>, layers::Masking, layers::GRU<4, layers::return_sequences<true>>, layers::LSTM<3>, layers::Dense<2>>;

/// A functional model on device D: a residual connection, each merge, a layer shared by two
/// calls and a nested model called as a layer.
template <class D> auto functional_model() {
  keras::Input<float, Shape<6, 6, 2>, dyn, D> inputs;
  auto a = layers::Conv2D<4, 3, layers::same, activations::relu>{}(inputs);
  auto b = layers::Conv2D<4, 1>{}(inputs);
  auto sum = layers::Add{}(a, b);
  auto product = layers::Multiply{}(sum, a);
  auto joined = layers::Concatenate<>{}(product, b);
  keras::Input<float, Shape<6, 6, 8>, dyn, D> inner_in;
  auto inner_out = layers::BatchNormalization{}(layers::DepthwiseConv2D<3, layers::same>{}(inner_in));
  keras::Model inner(inner_in, inner_out);
  auto pooled = layers::GlobalAveragePooling2D{}(inner(joined));
  layers::Dense<3, activations::tanh> shared;
  auto out = layers::Dense<2>{}(shared(layers::Dense<3>{}(pooled)));
  return keras::Model(inputs, out);
}

}  // namespace

TEST_CASE("a functional model on the reference device: merges, a shared layer and a nested model equal the cpu device's") {
  keras::backend::clear_session();
  auto on_cpu = functional_model<cpu>();
  auto on_reference = functional_model<reference>();
  static_assert(std::is_same_v<decltype(on_reference)::device_type, reference>);
  REQUIRE(on_cpu.trainable_variables().size() == 14);
  same_models(on_cpu, on_reference, random_uniform<float, Shape<dyn, 6, 6, 2>>(21, -1, 1, {3, 6, 6, 2}), 1e-5);
}

TEST_CASE("every layer of a Sequential runs on the reference device: outputs, gradients and moving statistics equal the cpu device's") {
  same_on_both<Images>(random_uniform<float, Shape<dyn, 6, 6, 3>>(11, -1, 1, {3, 6, 6, 3}));
  same_on_both<Pooled>(random_uniform<float, Shape<dyn, 6, 6, 3>>(12, -1, 1, {3, 6, 6, 3}));
  const Tensor<std::int32_t, Shape<dyn, 7>> tokens = cast<std::int32_t>(random_uniform<float, Shape<dyn, 7>>(13, 0, 11.99, {4, 7}));
  same_on_both<Tokens>(tokens);
  // Masked steps: each sequence's last steps are the mask value.
  Tensor<float, Shape<dyn, 5, 3>> steps = random_uniform<float, Shape<dyn, 5, 3>>(14, -1, 1, {3, 5, 3});
  for (std::size_t b = 0; b < 3; ++b)
    for (std::size_t t = 5 - b; t < 5; ++t)
      for (std::size_t c = 0; c < 3; ++c) steps(b, t, c) = 0.f;
  same_on_both<Steps>(steps);
}

TEST_CASE("a Sequential on the reference device: its weights live there, its calls and backward pass equal the cpu device's") {
  static_assert(std::is_same_v<device_t<decltype(std::declval<Net<reference>&>().get_layer<0>().layer.kernel)>, reference>);
  static_assert(std::is_same_v<device_t<decltype(std::declval<Net<reference>&>()(std::declval<const Tensor<float, Shape<dyn, 8, 8, 2>, reference>&>()))>, reference>);
  // The same dropout masks, outputs, weights' gradients, input adjoint and moving statistics.
  same_on_both<Net>(random_uniform<float, Shape<dyn, 8, 8, 2>>(7, -1, 1, {5, 8, 8, 2}), 1e-5);
}

TEST_CASE("keras::to<Device>(model) copies a model to another device: its names, flags, weights and dropout draws; the same outputs") {
  keras::backend::clear_session();
  Net<cpu> model;
  model.get_layer<4>().trainable = false;
  const auto x = random_uniform<float, Shape<dyn, 8, 8, 2>>(3, -1, 1, {4, 8, 8, 2});
  const auto first = eval(model(x, true));  // a training call draws a dropout mask
  auto moved = to<reference>(model);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(*moved)>::device_type, reference>);
  CHECK(moved->name == model.name);
  const auto from = model.layers(), to_layers = moved->layers();
  REQUIRE(from.size() == to_layers.size());
  for (std::size_t i = 0; i < from.size(); ++i) {
    CHECK(*to_layers[i].name == *from[i].name);
    CHECK(*to_layers[i].trainable == *from[i].trainable);
  }
  CHECK(moved->trainable_variables().size() == model.trainable_variables().size());
  const auto xr = to<reference>(x);
  CHECK(largest_difference(eval((*moved)(xr)), eval(model(x))) < 1e-5);
  // The copy draws the dropout mask the model draws next.
  CHECK(largest_difference(eval((*moved)(xr, true)), eval(model(x, true))) < 1e-5);
  CHECK(largest_difference(first, eval(model(x))) > 1e-3);  // (the training calls dropped something)
  // And back: the cpu device's outputs, bit for bit.
  auto back = to<cpu>(*moved);
  CHECK(largest_difference(eval((*back)(x)), eval(model(x))) == 0);
}
