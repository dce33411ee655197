#pragma once
/// @file
/// @brief keras.Sequential as a flat list of types: an Input, then layer specs. Each layer is
/// built for the output shape of the one before it, by the compiler; the model holds them in
/// one tuple (no nested layer types), runs them in order, and trains them backwards.
///
///     using Net = keras::Sequential<keras::Input<float, Shape<28, 28, 1>>,
///                                   layers::Conv2D<32, 3, activations::relu>, layers::MaxPooling2D<2>,
///                                   layers::Flatten, layers::Dense<10>>;
///     static_assert(Net::count_params() == 54410);
///     Net model;
///     auto logits = model(images);                    // inference: a view of the output
///     auto y = model(images, true);                   // training: recorded for backward
///     model.backward(dloss_dy);                       // gradients of every trainable weight

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ctflow/detail/pack.hpp>
#include <ctflow/keras/layer.hpp>
#include <ctflow/keras/layers/input.hpp>
#include <ctflow/keras/model.hpp>
#include <ctflow/keras/summary.hpp>

namespace ctflow::keras {

namespace detail {

/// The built layers of a chain of specs on device D from input shape S made by From (the Input,
/// then the layer before): built<T, S, D>, then each on the last's output. A layer that cannot
/// take its input is one error naming it, the layer before and the shape.
template <class L, class Tuple> struct prepend;
template <class L, class... Ls> struct prepend<L, std::tuple<Ls...>> { using type = std::tuple<L, Ls...>; };
template <class T, class S, class D, class From, class... Specs> struct chain { using type = std::tuple<>; };
template <class T, class S, class D, class From, class Spec, class... Rest> struct chain<T, S, D, From, Spec, Rest...> {
  input_check<Spec, S, From> checked;
  using layer = built_on_t<Spec, T, fitting_input_t<Spec, S>, D>;
  using type = typename prepend<layer, typename chain<typename layer::value_type, output_shape_t<layer>, D, Spec, Rest...>::type>::type;
};
/// The dtype of the last layer's output (the input's when there is none).
template <class InputSpec, class... Specs> struct chain_value {
  using layers = typename chain<typename InputSpec::value_type, typename InputSpec::shape_type, typename InputSpec::device_type, InputSpec, Specs...>::type;
  using type = typename std::conditional_t<(sizeof...(Specs) > 0), std::tuple_element<sizeof...(Specs) - (sizeof...(Specs) > 0), layers>,
                                           std::type_identity<InputSpec>>::type::value_type;
};
template <class Tuple> struct instances;
/// The layers' instances (type, a list) and what holds them (pack), built from their specs by make.
template <class... L> struct instances<std::tuple<L...>> {
  using type = std::tuple<layer_instance<L>...>;
  using pack = ctflow::detail::pack<layer_instance<L>...>;
  template <class... S> static pack make(const S&... s) { return pack{{{layer_instance<L>(s)}...}}; }
};

}  // namespace detail

/// @brief keras.Sequential(layers) over inputs described by InputSpec (a keras::Input).
template <class InputSpec, class... Specs>
class Sequential : public model_base<Sequential<InputSpec, Specs...>, typename detail::chain_value<InputSpec, Specs...>::type, typename InputSpec::device_type> {
 public:
  using input_value_type = typename InputSpec::value_type;
  using input_shape = typename InputSpec::shape_type;
  /// @brief The device of its weights, calls and backward passes (its Input's).
  using device_type = typename InputSpec::device_type;
  /// @brief The built layers, in order (layer_instance<L> holds each).
  using layers_type = typename detail::chain<input_value_type, input_shape, device_type, InputSpec, Specs...>::type;
  static constexpr std::size_t size = sizeof...(Specs);
  static_assert(size > 0, "ctflow::keras::Sequential: give at least one layer after the Input");
  /// @brief The dtype of the output and of the weights.
  using value_type = typename std::tuple_element_t<size - 1, layers_type>::value_type;
  using output_shape = detail::output_shape_t<std::tuple_element_t<size - 1, layers_type>>;
  using input_view = TensorView<const input_value_type, input_shape, device_type>;
  using output_view = TensorView<const value_type, output_shape, device_type>;
  /// @brief What a call takes and gives (as a functional Model names them).
  using input_type = input_view;
  using output_type = output_view;
  static constexpr const char* class_name = "Sequential";

  /// @brief The model's name (Keras's automatic sequential, sequential_1, ... by default) and
  /// whether its weights train.
  std::string name;
  bool trainable = true;

  /// @brief Builds every layer from its default spec (made in order: unseeded initializers draw
  /// their seeds layer by layer).
  Sequential() : Sequential(ctflow::detail::pack<InputSpec, Specs...>{{{InputSpec{}}, {Specs{}}...}}) {}
  /// @brief Builds every layer from the specs given (their fields: names, initializers, rates).
  explicit Sequential(InputSpec input, Specs... specs) : Sequential(ctflow::detail::pack<InputSpec, Specs...>{{{std::move(input)}, {std::move(specs)}...}}) {}

 private:
  // (The specs and the layers are packs, which cost the compiler less than std::tuples for each
  // kind of model: detail/pack.hpp.)
  explicit Sequential(ctflow::detail::pack<InputSpec, Specs...>&& specs)
      : input_spec_(std::move(ctflow::detail::get<0>(specs))),
        specs_(ctflow::detail::apply([](const auto&, const auto&... s) { return ctflow::detail::pack<Specs...>{{{s}...}}; }, specs)),
        layers_(ctflow::detail::apply([](const auto&, const auto&... s) { return detail::instances<layers_type>::make(s...); }, specs)) {
    ctflow::detail::apply([](auto&... l) { (l.name_if_unnamed(), ...); }, layers_);
    name = detail::auto_name("sequential");
    // Keras's Sequential with an Input also uses up a functional model's and an input layer's name.
    detail::auto_name("functional");
    if (input_spec_.name.empty()) input_spec_.name = detail::auto_name("input_layer");
  }

 public:
  Sequential(const Sequential&) = delete;
  Sequential& operator=(const Sequential&) = delete;

  /// @brief The parameters of the model, known to the compiler.
  static constexpr std::size_t count_params() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::size_t(0) + ... + keras::count_params<typename std::tuple_element_t<I, layers_type>>());
    }(std::make_index_sequence<size>{});
  }

  /// @brief Layer I (its layer_instance: `.layer`, `.name`, `.trainable`, `.output()`).
  template <std::size_t I> auto& get_layer() { return ctflow::detail::get<I>(layers_); }
  template <std::size_t I> const auto& get_layer() const { return ctflow::detail::get<I>(layers_); }

  /// @brief Runs the model on x (inference, or training: recorded for backward) and returns a
  /// view of its output, valid until the next call.
  output_view operator()(const input_view& x, bool training = false) {
    return run_from<0>(x, training, nullptr);
  }
  /// @brief The same for a tensor (viewed) or any expression (evaluated first) of the input's
  /// dtype and shape: another dtype or rank is a compile error, other extents a shape_error
  /// naming the model and its input.
  template <Expression X> requires(!std::is_same_v<std::remove_cvref_t<X>, input_view>)
  output_view operator()(const X& x, bool training = false) {
    constexpr bool fits = detail::takes_model_input<input_value_type, input_shape, device_type, X>;
    CTFLOW_STATIC_CHECK(fits, (detail::model_input_message<Sequential, input_value_type, input_shape, X>()));
    if constexpr (!fits) {
      return ctflow::detail::get<size - 1>(layers_).output();
    } else {
      detail::check_model_input<input_shape>(class_name, name, input_spec_.name, x.dims());
      if constexpr (detail::whole_tensor<X>) return (*this)(input_view(x.data(), x.dims()), training);
      input_tensor_ = x;
      return (*this)(input_view(input_tensor_.data(), input_tensor_.dims()), training);
    }
  }

  /// @brief The backward pass of the last training call: from dy, the adjoint of the output, every
  /// trainable weight's gradient (trainable_variables() and gradients() give them in order);
  /// returns the adjoint of the input when asked.
  std::optional<Tensor<input_value_type, input_shape, device_type>> backward(const output_view& dy, bool input_gradient = false) {
    return back<size - 1>(dy, input_gradient);
  }

  /// @brief The layers at run time: names, classes, output shapes, weights and their gradients.
  std::vector<layer_info<value_type>> layers() {
    std::vector<layer_info<value_type>> out;
    ctflow::detail::apply([&](auto&... l) { (out.push_back(detail::describe(l)), ...); }, layers_);
    return out;
  }

  /// @brief Keras's model.summary(): its table of layers, output shapes and parameters, and totals.
  void summary(const summary_options& options = {}) { detail::summarize(name, layers(), trainable, {}, false, options); }

  /// @brief This model on device To (keras::to<To>(model)): the same layers built from the same
  /// specs there, with this model's names, trainable flags, weights and random layers' states.
  template <class To> auto on_device() {
    using M = Sequential<detail::input_on_t<InputSpec, To>, Specs...>;
    detail::input_on_t<InputSpec, To> input;
    input.name = input_spec_.name;
    auto out = ctflow::detail::apply([&](const auto&... s) { return std::make_unique<M>(input, s...); }, specs_);
    out->name = name;
    out->trainable = trainable;
    detail::copy_layer_states(layers(), out->layers());
    out->set_weights(this->get_weights());
    return out;
  }

  /// @brief For model.save: the model's input as a .keras archive's config names it.
  void describe_inputs(detail::saved_model& m) const {
    m.input_shape.assign(input_shape::extents.begin(), input_shape::extents.end());
    m.input_dtype = dtype_name<input_value_type>();
    m.input_name = input_spec_.name;
  }

 private:
  // Each layer gets the mask of the layer before (Keras's mask propagation).
  template <std::size_t I, class V> output_view run_from(const V& x, bool training, const bool* mask) {
    auto& layer = ctflow::detail::get<I>(layers_);
    auto out = layer.forward(x, training, !trainable, mask);
    if constexpr (I + 1 == size) return out;
    else return run_from<I + 1>(out, training, layer.output_mask());
  }
  /// The backward pass from layer I down, given the adjoint of its output: the model's dy (a
  /// view of the caller's memory), or the adjoint layer I + 1 returned, which this pass owns: layer
  /// I may overwrite it, and it is freed as soon as layer I is done with it.
  /// `pooled`: the adjoint is a max pooling's gradient, which spread pooled, the adjoint of layer
  /// I's activation's operand over the pooled extents (see below): layer I's backward pass starts
  /// below its activation, and frees pooled when done.
  template <std::size_t I, class Dy, class P = std::nullptr_t> std::optional<Tensor<input_value_type, input_shape, device_type>> back(Dy&& adjoint, bool input_gradient, P pooled = nullptr) {
    auto& layer = ctflow::detail::get<I>(layers_);
    using L = std::remove_cvref_t<decltype(layer)>;
    constexpr bool owned = !std::remove_cvref_t<Dy>::is_view;
    // keep: the adjoint goes further down (pooled for layer I - 1), so layer I may not overwrite it.
    auto run = [&](bool want_input, bool keep = false) {
      const auto below = [&] {
        if constexpr (std::is_null_pointer_v<P>) return nullptr;
        else return TensorView<const typename P::value_type, typename P::shape_type, device_type>(pooled);
      }();
      if constexpr (owned) {
        auto dx = layer.backward(typename L::output_view(adjoint.data(), adjoint.dims()), want_input, !trainable, !keep, below);
        if (!keep) { auto done = std::move(adjoint); }
        if constexpr (!std::is_null_pointer_v<P>) { auto done = std::move(pooled); }
        return dx;
      } else {
        return layer.backward(adjoint, want_input, !trainable, false, below);
      }
    };
    if constexpr (I == 0) {
      auto dx = run(input_gradient);
      if (!dx) return std::nullopt;
      return std::move(*dx);
    } else if (!input_gradient && !params_before<I>()) {
      // Nothing before this layer has weights: its input's adjoint would go nowhere (a
      // Rescaling in front of the first convolution).
      run(false);
      return std::nullopt;
    } else if constexpr (detail::views_input<typename L::layer_type> && owned) {
      // A reshape (Flatten): its input's adjoint is the adjoint's memory, with the input's extents.
      auto& before = ctflow::detail::get<I - 1>(layers_);
      using B = std::remove_cvref_t<decltype(before)>;
      return back<I - 1>(std::move(adjoint).template reshaped<typename B::output_shape>(before.output().dims()), input_gradient);
    } else if constexpr (folds_activation<I>() && !owned) {
      return back<I>(Tensor<typename L::value_type, typename L::output_shape, device_type>(adjoint), input_gradient);  // the fold below writes into the adjoint
    } else {
      if constexpr (folds_activation<I>()) {
        // Layer I is a max pooling after an activation whose adjoint reads only its value (relu):
        // a pooled element's adjoint reaches one input, where the activation's value is the
        // pooled element itself, so the activation's adjoint is taken here, over the pooled
        // extents (a quarter of the activation's for 2 x 2 windows), and layer I - 1's backward
        // pass starts below its activation, its bias's gradient summed over this adjoint. Nothing
        // reads that layer's output any more (the pooling's gradient reads where each window's
        // maximum was), so its memory goes back for the pooling's input adjoint to take: a
        // model's layer outputs are views valid until the next call, and in training until the
        // backward pass.
        typename L::output_view dy(adjoint.data(), adjoint.dims());
        auto& before = ctflow::detail::get<I - 1>(layers_);
        TensorView<typename L::value_type, typename L::output_shape, device_type>(adjoint.data(), adjoint.dims()) = before.activation_adjoint(dy, layer.output());
        before.release_output();
      }
      auto dx = run(true, folds_activation<I>());
      if (!dx) throw value_error("ctflow::keras::Sequential: layer " + layer.name + " gave no gradient for its input");
      if constexpr (folds_activation<I>()) return back<I - 1>(std::move(*dx), input_gradient, std::move(adjoint));
      else return back<I - 1>(std::move(*dx), input_gradient);
    }
  }

  /// Whether layer I takes the activation adjoint of layer I - 1 (see back).
  template <std::size_t I> static constexpr bool folds_activation() {
    if constexpr (I == 0) return false;
    else return detail::selects_maximum<typename std::tuple_element_t<I, instances_type>::layer_type>() && std::tuple_element_t<I - 1, instances_type>::activation_from_value;
  }

  /// Whether a layer before layer I has weights (trainable or not).
  template <std::size_t I> static constexpr bool params_before() {
    return []<std::size_t... J>(std::index_sequence<J...>) {
      return ((keras::count_params<std::tuple_element_t<J, layers_type>>() > 0) || ...);
    }(std::make_index_sequence<I>{});
  }

  InputSpec input_spec_;
  ctflow::detail::pack<Specs...> specs_;  // what to<Device> builds the model from again
  Tensor<input_value_type, input_shape, device_type> input_tensor_;
  using instances_type = typename detail::instances<layers_type>::type;
  typename detail::instances<layers_type>::pack layers_;
};

/// @brief keras::to<Device>(model): a copy of the model on another device (its weights, names,
/// flags and random layers' states), as a new model; `to<reference>(model)` with ctflow's names
/// in scope.
template <class To, class InputSpec, class... Specs> auto to(Sequential<InputSpec, Specs...>& model) { return model.template on_device<To>(); }

}  // namespace ctflow::keras
