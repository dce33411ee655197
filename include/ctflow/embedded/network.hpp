#pragma once
/// @file
/// @brief A network compiled into the program for inference: embedded::Sequential<Input, Layers...>
/// (a chain) or embedded::Model<Input, Node<Layer, From...>...> (any graph: residual blocks,
/// concatenations), whose layers carry their weights as template arguments (references to
/// `constexpr` arrays, which keras::export_header writes), runs with no heap allocation, no
/// exceptions, no RTTI, no threads and no file system on a device whose kernels need none
/// (`reference`: plain loops, the portable path for microcontrollers).
///
///     alignas(64) inline constexpr float kernel[784 * 10] = {...};
///     alignas(64) inline constexpr float bias[10] = {...};
///     using Net = embedded::Sequential<embedded::Input<float, Shape<1, 784>>,
///                                      embedded::Dense<10, keras::activations::linear, kernel, bias>>;
///     Net::predict(image, logits);           // float image[784], logits[10]
///     std::printf("%zu bytes\n", Net::arena_bytes);
///
///     using Block = embedded::Model<embedded::Input<float, Shape<1, 8, 8, 4>>,
///                                   embedded::Node<embedded::Conv2D<4, same3, relu, k1, b1>, 0>,   // activation 1
///                                   embedded::Node<embedded::Conv2D<4, same3, linear, k2, b2>, 1>, // 2
///                                   embedded::Node<embedded::Add, 2, 0>,                           // 3: 2 + the input
///                                   embedded::Node<embedded::Activation<relu>, 3>>;                // the output
///
/// Every activation lives in one static arena planned by the compiler from the layers' shapes and
/// the graph (the input and the output of the network are the caller's memory): each activation
/// from the node that writes it to the last that reads it, 64-byte aligned, at the end of the
/// arena away from the first activation its node reads (so that a chain's activations alternate
/// between the arena's two ends: the largest input and output pair of any layer is the whole
/// arena), in the smallest arena where that plan fits; an element-wise layer writes over its
/// input where nothing reads that memory later, and Flatten and Reshape read their input's memory
/// with another shape. After the activations comes the scratch of the layer that needs the most
/// (softmax: its rows' maxima and sums): `arena_bytes`.

#include <algorithm>
#include <array>
#include <cstddef>
#include <limits>
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
  in_place,  ///< over its (first) input, where nothing reads that memory later and it is not the network's input (element-wise layers)
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

/// @brief A node of an embedded::Model: layer Spec over the activations From... (0: the network's
/// input; k: node k's output, nodes counted from 1), as a functional Keras model calls a layer on
/// earlier tensors. A layer of one input takes one; a merge (Add, Concatenate, ...) two or more.
template <class Spec, std::size_t... From> struct Node {
  static_assert(sizeof...(From) > 0, "ctflow::embedded::Node: give the activations the layer reads");
  using spec = Spec;
  static constexpr std::array<std::size_t, sizeof...(From)> from{From...};
};

/// @brief An offset of `Model::offsets`: the activation is the caller's input, or its output.
inline constexpr std::size_t in_input = std::numeric_limits<std::size_t>::max();
inline constexpr std::size_t in_output = in_input - 1;

namespace detail {

inline constexpr std::size_t alignment = 64;
constexpr std::size_t aligned(std::size_t bytes) { return (bytes + alignment - 1) / alignment * alignment; }

/// The scratch a built layer asks for while it runs (`scratch_bytes`; none where it names none).
template <class L> constexpr std::size_t scratch_of() {
  if constexpr (requires { L::scratch_bytes; }) return L::scratch_bytes;
  else return 0;
}

/// The dtype and shape of activation K (0: the input) of built layers Built.
template <class InputSpec, class Built, std::size_t K> struct activation {
  using value_type = typename InputSpec::value_type;
  using shape = typename InputSpec::shape_type;
};
template <class InputSpec, class Built, std::size_t K> requires(K > 0) struct activation<InputSpec, Built, K> {
  using value_type = typename std::tuple_element_t<K - 1, Built>::value_type;
  using shape = typename std::tuple_element_t<K - 1, Built>::output_shape;
};

/// The built layers of Nodes from InputSpec: each node's spec built for the dtype of the first
/// activation it reads and the shapes of all of them (built<T, In...>), in order.
template <class InputSpec, class Built, class... Nodes> struct graph { using type = Built; };
template <class InputSpec, class... Built, class N, class... Rest> struct graph<InputSpec, std::tuple<Built...>, N, Rest...> {
  static constexpr std::size_t count = sizeof...(Built) + 1;
  static_assert([] {
    for (std::size_t f : N::from)
      if (f >= count) return false;
    return true;
  }(), "ctflow::embedded::Node: a node reads an activation of a later node or of itself (0 is the input, k node k's output)");
  template <std::size_t K> using act = activation<InputSpec, std::tuple<Built...>, (K < count ? K : 0)>;
  using layer = typename decltype([]<std::size_t... J>(std::index_sequence<J...>) {
    return std::type_identity<typename N::spec::template built<typename act<N::from[0]>::value_type, typename act<N::from[J]>::shape...>>{};
  }(std::make_index_sequence<N::from.size()>{}))::type;
  using type = typename graph<InputSpec, std::tuple<Built..., layer>, Rest...>::type;
};

/// The nodes of a chain of specs: layer k over activation k - 1.
template <class InputSpec, class Is, class... Specs> struct chain_model;
template <class InputSpec, std::size_t... I, class... Specs> struct chain_model<InputSpec, std::index_sequence<I...>, Specs...> {
  using nodes = std::tuple<Node<Specs, I>...>;
};

/// The arena's plan of a graph of n activations: each one's bytes, the placement of the layer that
/// writes it, the activations each node reads; where each activation lives.
template <std::size_t N> struct plan {
  std::array<std::size_t, N> root{};    // the activation whose memory it is (0: the caller's input)
  std::array<std::size_t, N> offset{};  // the root's offset in the arena, or in_input / in_output
  std::size_t bytes = 0;                // of the activations' part of the arena
};

/// Plans the arena of activations of bytes b, written by layers of placement p (p[0]: the input),
/// node k reading reads[k] (its first first): the memory each shares, the offsets of those of
/// their own at the end of the arena away from their node's first input, in the smallest arena
/// tried (from the most bytes live at once, upwards by 1/32) where they fit.
template <std::size_t N, std::size_t MaxReads>
constexpr plan<N> plan_arena(const std::array<std::size_t, N>& b, const std::array<placement, N>& p,
                             const std::array<std::array<std::size_t, MaxReads>, N>& reads, const std::array<std::size_t, N>& read_count) {
  plan<N> r{};
  // The memory each activation shares: a view's its input's; an in-place layer's its input's where
  // no other node reads that memory from this node on.
  const auto reads_root_after = [&](std::size_t root, std::size_t node) {
    for (std::size_t j = node + 1; j < N; ++j)
      for (std::size_t i = 0; i < read_count[j]; ++i)
        if (reads[j][i] < node && r.root[reads[j][i]] == root) return true;
    for (std::size_t i = 1; i < read_count[node]; ++i)
      if (r.root[reads[node][i]] == root && reads[node][i] != reads[node][0]) return true;
    return false;
  };
  for (std::size_t k = 1; k < N; ++k) {
    const std::size_t in = r.root[reads[k][0]];
    if (p[k] == placement::view) r.root[k] = in;
    else if (p[k] == placement::in_place && in != 0 && !reads_root_after(in, k)) r.root[k] = in;
    else r.root[k] = k;
  }
  const std::size_t out = r.root[N - 1];
  // Each root's life: from its node to the last node that reads it or an activation sharing it.
  std::array<std::size_t, N> last{};
  for (std::size_t k = 0; k < N; ++k) last[k] = k;
  for (std::size_t j = 1; j < N; ++j)
    for (std::size_t i = 0; i < read_count[j]; ++i) last[r.root[reads[j][i]]] = std::max(last[r.root[reads[j][i]]], j);
  const auto in_arena = [&](std::size_t k) { return k != 0 && k != out && r.root[k] == k; };
  std::size_t most = 0, total = 0;
  for (std::size_t t = 1; t < N; ++t) {
    std::size_t live = 0;
    for (std::size_t k = 1; k <= t; ++k)
      if (in_arena(k) && last[k] >= t) live += b[k];
    most = std::max(most, live);
  }
  for (std::size_t k = 1; k < N; ++k) total += in_arena(k) ? b[k] : 0;
  const auto overlaps = [&](std::size_t k, std::size_t at) {  // [at, at + b[k]) against every root live with k, placed before it
    for (std::size_t j = 1; j < k; ++j)
      if (in_arena(j) && last[j] >= k && at < r.offset[j] + b[j] && r.offset[j] < at + b[k]) return true;
    return false;
  };
  const auto try_arena = [&](std::size_t arena) {
    for (std::size_t k = 1; k < N; ++k) {
      if (!in_arena(k)) continue;
      // The lowest offset that fits (at 0 or after a live root), and the highest (at the top or
      // before one).
      std::size_t low = in_input, high = in_input;
      for (std::size_t j = 0; j < k; ++j) {
        if (j > 0 && !(in_arena(j) && last[j] >= k)) continue;
        const std::size_t at_low = j == 0 ? 0 : r.offset[j] + b[j];
        if (at_low + b[k] <= arena && !overlaps(k, at_low) && at_low < low) low = at_low;
        const std::size_t top = j == 0 ? arena : r.offset[j];
        if (top >= b[k] && !overlaps(k, top - b[k]) && (high == in_input || top - b[k] > high)) high = top - b[k];
      }
      if (low == in_input) return false;
      // Away from the first activation the node reads: the top where that lies in the arena's
      // lower half.
      const std::size_t first = r.root[reads[k][0]];
      const bool top = in_arena(first) && 2 * r.offset[first] + b[first] <= arena && high != in_input;
      r.offset[k] = top ? high : low;
    }
    return true;
  };
  r.bytes = most;
  while (r.bytes < total && !try_arena(r.bytes)) r.bytes += std::max(alignment, aligned(r.bytes / 32));
  if (r.bytes >= total) {  // none smaller found: every root memory of its own
    r.bytes = 0;
    for (std::size_t k = 1; k < N; ++k)
      if (in_arena(k)) r.offset[k] = r.bytes, r.bytes += b[k];
  }
  for (std::size_t k = 0; k < N; ++k)
    r.offset[k] = r.root[k] == 0 ? in_input : r.root[k] == out ? in_output : r.offset[r.root[k]];
  return r;
}

}  // namespace detail

/// @brief A functional Keras model compiled for inference: an Input, then nodes (a layer and the
/// activations it reads), each layer built for the activations it reads by the compiler.
template <class InputSpec, class... Nodes> class Model {
 public:
  static constexpr std::size_t size = sizeof...(Nodes);
  static_assert(size > 0, "ctflow::embedded::Model: give at least one node after the Input");
  using input_value_type = typename InputSpec::value_type;
  using input_shape = typename InputSpec::shape_type;
  /// @brief The built layers, in order.
  using layers_type = typename detail::graph<InputSpec, std::tuple<>, Nodes...>::type;
  using value_type = typename std::tuple_element_t<size - 1, layers_type>::value_type;
  using output_shape = typename std::tuple_element_t<size - 1, layers_type>::output_shape;

 private:
  template <std::size_t K> using activation = detail::activation<InputSpec, layers_type, K>;
  static constexpr std::size_t most_reads = std::max({Nodes::from.size()...});
  static constexpr auto plan_ = [] {
    std::array<std::size_t, size + 1> bytes{}, count{};
    std::array<placement, size + 1> place{};
    std::array<std::array<std::size_t, most_reads>, size + 1> reads{};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((bytes[K] = detail::aligned(activation<K>::shape::static_size * sizeof(typename activation<K>::value_type))), ...);
    }(std::make_index_sequence<size + 1>{});
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((place[I + 1] = std::tuple_element_t<I, layers_type>::place), ...);
      ((count[I + 1] = Nodes::from.size()), ...);
      ((std::copy(Nodes::from.begin(), Nodes::from.end(), reads[I + 1].begin())), ...);
    }(std::make_index_sequence<size>{});
    return detail::plan_arena(bytes, place, reads, count);
  }();

 public:
  /// @brief Where each activation lives (0: the input; k: node k's output): its byte offset in
  /// the arena, or in_input / in_output where it is the caller's memory.
  static constexpr std::array<std::size_t, size + 1> offsets = plan_.offset;
  static_assert(offsets[size] != in_input,
                "ctflow::embedded: every layer from the input to the output only views its input (Flatten, Reshape): the output would be the input's memory");

  /// @brief The bytes of the arena: the activations', then the scratch the layers that need some
  /// share after them.
  static constexpr std::size_t activation_bytes = plan_.bytes;
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
      (run_node<D, I, Nodes>(x, y, arena), ...);
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
  template <std::size_t K> static typename activation<K>::value_type* address(const input_value_type* x, value_type* y, std::byte* arena) {
    using A = typename activation<K>::value_type;
    if constexpr (offsets[K] == in_input) return reinterpret_cast<A*>(const_cast<input_value_type*>(x));
    else if constexpr (offsets[K] == in_output) return reinterpret_cast<A*>(y);
    else return reinterpret_cast<A*>(arena + offsets[K]);
  }
  template <class D, std::size_t K> static auto input_view(const input_value_type* x, value_type* y, std::byte* arena) {
    return TensorView<const typename activation<K>::value_type, typename activation<K>::shape, D>(address<K>(x, y, arena));
  }
  template <class D, std::size_t I, class N> static void run_node(const input_value_type* x, value_type* y, std::byte* arena) {
    using L = std::tuple_element_t<I, layers_type>;
    if constexpr (L::place != placement::view) {
      using Out = activation<I + 1>;
      const TensorView<typename Out::value_type, typename Out::shape, D> out(address<I + 1>(x, y, arena));
      std::byte* scratch = arena + activation_bytes;
      if constexpr (N::from.size() > 1) {
        [&]<std::size_t... J>(std::index_sequence<J...>) {
          L::template run<D>(std::tuple{input_view<D, N::from[J]>(x, y, arena)...}, out);
        }(std::make_index_sequence<N::from.size()>{});
      } else if constexpr (detail::scratch_of<L>() > 0) {
        L::template run<D>(input_view<D, N::from[0]>(x, y, arena), out, scratch);
      } else {
        L::template run<D>(input_view<D, N::from[0]>(x, y, arena), out);
      }
    }
  }
};

namespace detail {
template <class InputSpec, class Nodes> struct model_of;
template <class InputSpec, class... N> struct model_of<InputSpec, std::tuple<N...>> { using type = Model<InputSpec, N...>; };
}  // namespace detail

/// @brief keras.Sequential compiled for inference: an Input, then layers (embedded::Dense,
/// Conv2D, MaxPooling2D, ...), each built for the output of the one before by the compiler (the
/// Model whose node k reads activation k - 1).
template <class InputSpec, class... Specs>
class Sequential : public detail::model_of<InputSpec, typename detail::chain_model<InputSpec, std::index_sequence_for<Specs...>, Specs...>::nodes>::type {
  static_assert(sizeof...(Specs) > 0, "ctflow::embedded::Sequential: give at least one layer after the Input");
};

}  // namespace ctflow::embedded
