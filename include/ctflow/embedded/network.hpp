#pragma once
/// @file
/// @brief A network compiled into the program for inference: embedded::Sequential<Input, Layers...>,
/// whose layers carry their weights as template arguments (references to `constexpr` arrays,
/// which keras::export_header writes), runs with no heap allocation, no exceptions, no RTTI, no
/// threads and no file system on a device whose kernels need none (`reference`: plain loops, the
/// portable path for microcontrollers).
///
///     alignas(64) inline constexpr float kernel[784 * 10] = {...};
///     alignas(64) inline constexpr float bias[10] = {...};
///     using Net = embedded::Sequential<embedded::Input<float, Shape<1, 784>>,
///                                      embedded::Dense<10, keras::activations::linear, kernel, bias>>;
///     Net::predict(image, logits);           // float image[784], logits[10]
///     std::printf("%zu bytes\n", Net::arena_bytes);
///
/// Every activation lives in one static arena planned by the compiler from the layers' shapes: a
/// layer reads its input from one end of the arena and writes its output at the other (the input
/// and the output of the network are the caller's memory), an element-wise layer writes over its
/// input, and Flatten and Reshape read their input's memory with another shape. The arena is the
/// largest input and output pair of any layer, each activation 64-byte aligned, and after it
/// the scratch of the layer that needs the most (softmax: its rows' maxima and sums):
/// `arena_bytes`.

#include <algorithm>
#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ctflow/core/device.hpp>
#include <ctflow/core/shape.hpp>
#include <ctflow/core/tensor.hpp>

namespace ctflow::embedded {

/// @brief Where a layer's output goes.
enum class placement {
  buffer,    ///< memory of its own (a matmul, a convolution, a pooling)
  in_place,  ///< over its input, where the input is the network's own memory (element-wise layers)
  view,      ///< its input's memory, read with the output's shape (Flatten, Reshape)
};

/// @brief The network's input: its dtype and its static shape, the batch axis included
/// (`Input<float, Shape<1, 28, 28, 1>>`).
template <class T, ShapeType S> struct Input {
  static_assert(S::is_static, "ctflow::embedded::Input: every extent must be static (the batch too): the arena is planned from them");
  static_assert(S::rank >= 1, "ctflow::embedded::Input: give the batch axis");
  using value_type = T;
  using shape_type = S;
};

namespace detail {

/// The built layers of specs from dtype T and shape S: each spec's built<T, S>, then each on
/// the last's output.
template <class T, class S, class... Specs> struct chain { using type = std::tuple<>; };
template <class T, class S, class Spec, class... Rest> struct chain<T, S, Spec, Rest...> {
  using layer = typename Spec::template built<T, S>;
  using type = decltype(std::tuple_cat(std::declval<std::tuple<layer>>(),
                                       std::declval<typename chain<typename layer::value_type, typename layer::output_shape, Rest...>::type>()));
};

/// Where an activation lives: the caller's input or output, or one end of the arena.
enum class slot : unsigned char { input, low, high, output };

inline constexpr std::size_t alignment = 64;
constexpr std::size_t aligned(std::size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; }

/// The scratch a built layer asks for while it runs (`scratch_bytes`; none where it names none).
template <class L> constexpr std::size_t scratch_of() {
  if constexpr (requires { L::scratch_bytes; }) return L::scratch_bytes;
  else return 0;
}

}  // namespace detail

/// @brief keras.Sequential compiled for inference: an Input, then layers (embedded::Dense,
/// Conv2D, MaxPooling2D, ...), each built for the output of the one before by the compiler.
template <class InputSpec, class... Specs> class Sequential {
 public:
  static constexpr std::size_t size = sizeof...(Specs);
  static_assert(size > 0, "ctflow::embedded::Sequential: give at least one layer after the Input");
  using input_value_type = typename InputSpec::value_type;
  using input_shape = typename InputSpec::shape_type;
  /// @brief The built layers, in order.
  using layers_type = typename detail::chain<input_value_type, input_shape, Specs...>::type;
  using value_type = typename std::tuple_element_t<size - 1, layers_type>::value_type;
  using output_shape = typename std::tuple_element_t<size - 1, layers_type>::output_shape;

 private:
  template <std::size_t K> struct activation {  // activation K: the input (0) or layer K - 1's output
    using layer = std::tuple_element_t<(K > 0 ? K - 1 : 0), layers_type>;
    using value_type = std::conditional_t<K == 0, input_value_type, typename layer::value_type>;
    using shape = std::conditional_t<K == 0, input_shape, typename layer::output_shape>;
  };
  static constexpr std::array<std::size_t, size + 1> bytes_ = []<std::size_t... K>(std::index_sequence<K...>) {
    return std::array<std::size_t, size + 1>{detail::aligned(activation<K>::shape::static_size * sizeof(typename activation<K>::value_type))...};
  }(std::make_index_sequence<size + 1>{});

  // Each activation's slot: a layer that writes memory of its own takes the other end of the
  // arena from its input's; the activations the network's output shares (through in-place
  // layers and views) are the caller's output.
  static constexpr std::array<detail::slot, size + 1> plan() {
    using detail::slot;
    std::array<slot, size + 1> s{};
    s[0] = slot::input;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((s[I + 1] = std::tuple_element_t<I, layers_type>::place == placement::view ||
                           (std::tuple_element_t<I, layers_type>::place == placement::in_place && s[I] != slot::input)
                       ? s[I]
                       : (s[I] == slot::low ? slot::high : slot::low)),
       ...);
    }(std::make_index_sequence<size>{});
    const slot last = s[size];
    for (std::size_t k = size + 1; k-- > 0 && s[k] == last;) s[k] = slot::output;
    return s;
  }

 public:
  /// @brief Where each activation lives (0: the input; k: layer k - 1's output).
  static constexpr std::array<detail::slot, size + 1> slots = plan();
  static_assert(slots[0] == detail::slot::input,
                "ctflow::embedded::Sequential: every layer only views its input (Flatten, Reshape): the output would be the input's memory");

  /// @brief The bytes of the arena: every activation between the input and the output, at
  /// either end of its first part, and the scratch the layers that need some share after it.
  static constexpr std::size_t activation_bytes = [] {
    std::size_t most = 0;
    const auto in_arena = [](detail::slot s) { return s == detail::slot::low || s == detail::slot::high; };
    for (std::size_t i = 0; i < size; ++i)
      most = std::max(most, (in_arena(slots[i]) ? bytes_[i] : 0) + (in_arena(slots[i + 1]) && slots[i + 1] != slots[i] ? bytes_[i + 1] : 0));
    return most;
  }();
  static constexpr std::size_t scratch_bytes = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::max({std::size_t(0), detail::aligned(detail::scratch_of<std::tuple_element_t<I, layers_type>>())...});
  }(std::make_index_sequence<size>{});
  static constexpr std::size_t arena_bytes = activation_bytes + scratch_bytes;

  /// @brief The parameters of the network (the elements of its weight arrays).
  static constexpr std::size_t count_params() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::size_t(0) + ... + std::tuple_element_t<I, layers_type>::params);
    }(std::make_index_sequence<size>{});
  }

  /// @brief Runs the network on x (input_shape's elements, row-major) into y (output_shape's) on
  /// device D, in the arena given (arena_bytes, 64-byte aligned) or in the network's own, a
  /// static array (one call at a time).
  template <class D = reference> static void predict(const input_value_type* x, value_type* y, std::byte* arena = own_arena()) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (run_layer<D, I>(address<I>(x, y, arena), address<I + 1>(x, y, arena), arena + activation_bytes), ...);
    }(std::make_index_sequence<size>{});
  }
  /// @brief The same on views of device D (contiguous, of the network's shapes).
  template <class D> static void predict(const TensorView<const input_value_type, input_shape, D>& x, const TensorView<value_type, output_shape, D>& y,
                                         std::byte* arena = own_arena()) {
    predict<D>(x.data(), y.data(), arena);
  }

 private:
  static std::byte* own_arena() {
    alignas(detail::alignment) static std::byte arena[arena_bytes > 0 ? arena_bytes : 1];
    return arena;
  }
  template <std::size_t K> static void* address(const input_value_type* x, value_type* y, std::byte* arena) {
    if constexpr (slots[K] == detail::slot::input) return const_cast<input_value_type*>(x);
    else if constexpr (slots[K] == detail::slot::output) return y;
    else if constexpr (slots[K] == detail::slot::low) return arena;
    else return arena + activation_bytes - bytes_[K];
  }
  template <class D, std::size_t I> static void run_layer(void* in, void* out, std::byte* scratch) {
    using L = std::tuple_element_t<I, layers_type>;
    if constexpr (L::place != placement::view) {
      using In = activation<I>;
      using Out = activation<I + 1>;
      const TensorView<const typename In::value_type, typename In::shape, D> x(static_cast<const typename In::value_type*>(in));
      const TensorView<typename Out::value_type, typename Out::shape, D> y(static_cast<typename Out::value_type*>(out));
      if constexpr (detail::scratch_of<L>() > 0) L::template run<D>(x, y, scratch);
      else L::template run<D>(x, y);
    }
  }
};

}  // namespace ctflow::embedded
