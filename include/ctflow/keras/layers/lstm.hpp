#pragma once
/// @file
/// @brief keras.layers.LSTM: a long short-term memory over [batch, timesteps, features], Keras's
/// gate order [i, f, c, o] in its kernel [features, 4 units], recurrent kernel [units, 4 units]
/// and bias [4 units]:
///
///     z = x_t @ kernel + h @ recurrent_kernel + bias
///     i, f, o = recurrent_activation(z_i, z_f, z_o);  c = f * c + i * activation(z_c)
///     h = o * activation(c)
///
/// Its output is the last h, or every step's with return_sequences; its backward pass runs through
/// time.
///
///     layers::LSTM<64>                                   // tanh, sigmoid gates, forget bias 1
///     layers::LSTM<32, layers::return_sequences<true>>{.recurrent_initializer = initializers::Orthogonal(1.0, 7)}

#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <ctflow/keras/layers/recurrent.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.LSTM(units, activation, recurrent_activation, use_bias, return_sequences,
/// go_backwards, unit_forget_bias, ...).
template <std::size_t Units, auto... Options> struct LSTM {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 3;
  static constexpr const char* input_form = "[batch, timesteps, features] with static features";
  static_assert((detail::allowed<Options, detail::any_activation, detail::any_recurrent_activation, use_bias_t, return_sequences_t, go_backwards_t> &&
                 ...),
                "ctflow::keras::LSTM: options are an activation, layers::recurrent_activation<...>, layers::use_bias<...>, "
                "layers::return_sequences<...> and layers::go_backwards<...>");
  static_assert(Units > 0, "ctflow::keras::LSTM: units must be positive");
  static constexpr auto activation = detail::activation_or<activations::tanh, Options...>();
  static constexpr auto recurrent_activation = detail::recurrent_activation_option<Options...>();
  static constexpr bool has_bias = detail::option<use_bias_t, use_bias<true>, Options...>().on;
  static constexpr bool sequences = detail::option<return_sequences_t, return_sequences<false>, Options...>().on;
  static constexpr bool backwards = detail::option<go_backwards_t, go_backwards<false>, Options...>().on;

  CTFLOW_KERAS_LAYER_SPEC("LSTM");
  initializers::Initializer kernel_initializer = initializers::GlorotUniform();
  initializers::Initializer recurrent_initializer = initializers::Orthogonal();
  initializers::Initializer bias_initializer = initializers::Zeros();
  /// @brief The forget gate's bias starts at 1 (Keras's default), the others from bias_initializer.
  bool unit_forget_bias = true;
  regularizers::Regularizer kernel_regularizer{}, recurrent_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: the RNN's flags, units, activations, use_bias, the initializers,
  /// unit_forget_bias, the regularizers, no constraints, no dropout and no seed.
  void get_config(config_dict& c) const {
    detail::recurrent_config_head<Units>(c, *this);
    c.set("unit_forget_bias", unit_forget_bias);
    detail::recurrent_config_tail(c, *this);
    c.set("seed", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 3, "ctflow::keras::LSTM: its input must be [batch, timesteps, features]");
    static_assert(host_device_v<D>, "ctflow::keras::LSTM: its steps are loops on the host, so it runs on cpu and reference");
    static constexpr std::size_t features = In::extents[2], units = Units, gates = 4 * Units;
    static_assert(features != dyn, "ctflow::keras::LSTM: the input's features (its last axis) must have a static extent");
    static constexpr const char* class_name = "LSTM";
    using spec = LSTM;  // its activations and flags
    static constexpr const char* cell_class_name = "LSTMCell";
    static constexpr bool differentiates_itself = true;
    static constexpr bool consumes_mask = true;
    static constexpr bool supports_masking = sequences;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = detail::recurrent_output<In, Units, sequences>;
    /// The extents of the output for input extents in.
    static auto output_dims(const dims_t<3>& in) { return detail::recurrent_dims<Units, sequences>(in); }
    using fx = detail::scalar_of<activation>;
    using fr = detail::scalar_of<recurrent_activation>;

    regularizers::Regularizer kernel_regularizer, recurrent_regularizer, bias_regularizer;
    Variable<T, Shape<features, gates>, D> kernel;
    Variable<T, Shape<units, gates>, D> recurrent_kernel;
    std::conditional_t<has_bias, Variable<T, Shape<gates>, D>, std::monostate> bias;

    explicit built(const LSTM& c)
        : kernel_regularizer(c.kernel_regularizer),
          recurrent_regularizer(c.recurrent_regularizer),
          bias_regularizer(c.bias_regularizer),
          kernel(c.kernel_initializer.template operator()<T, Shape<features, gates>, D>(), "kernel"),
          recurrent_kernel(c.recurrent_initializer.template operator()<T, Shape<units, gates>, D>(), "recurrent_kernel") {
      if constexpr (has_bias) {
        Tensor<T, Shape<gates>> b;
        if (c.unit_forget_bias) {
          // Keras: the initializer's [units], ones [units], the initializer's [2 units].
          c.bias_initializer.fill(b.data(), {units});
          std::fill_n(b.data() + units, units, T(1));
          c.bias_initializer.fill(b.data() + 2 * units, {2 * units});
        } else {
          c.bias_initializer.fill(b.data(), {gates});
        }
        bias = Variable<T, Shape<gates>, D>(to<D>(b), "bias");
      }
    }
    auto weights() {
      if constexpr (has_bias) return std::tie(kernel, recurrent_kernel, bias);
      else return std::tie(kernel, recurrent_kernel);
    }
    auto weight_regularizers() const {
      if constexpr (has_bias) return std::tie(kernel_regularizer, recurrent_regularizer, bias_regularizer);
      else return std::tie(kernel_regularizer, recurrent_regularizer);
    }

    /// What a call keeps for its backward pass (each call of the layer has its own: a layer
    /// shared by two calls of a model, or called twice in a custom layer, trains right).
    struct call_state {
      detail::sequence seq_;
      const T* x_ = nullptr;  // the forward's input (the model keeps it until backward)
      // Per step: the activated gates [i, f, c, o], the cells and states (step 0: zeros) and
      // activation(c); the backward pass's adjoints of h, c and the gates' inputs.
      std::vector<T> gates_, cells_, states_, cell_out_, dh_, dc_, dz_;
    };

    /// Runs the sequence x into out, keeping in st each step's gates and states for backward;
    /// mask: [batch, timesteps] (null: none).
    template <class X, class Out> void forward(const X& x, Out& out, bool /*training*/, call_state& st, const bool* mask = nullptr) const {
      auto& [seq_, x_, gates_, cells_, states_, cell_out_, dh_, dc_, dz_] = st;
      seq_ = {x.dims()[0], x.dims()[1], backwards, mask};
      const std::size_t B = seq_.batch, S = seq_.steps;
      if (S == 0) throw value_error("ctflow::keras::LSTM: its input has no timesteps");
      keras::detail::resize(out, output_dims(x.dims()));
      gates_.resize(S * B * gates);
      cells_.assign((S + 1) * B * units, T(0));
      states_.assign((S + 1) * B * units, T(0));
      cell_out_.resize(S * B * units);
      const T* xd = x_ = x.data();
      for (std::size_t t = 0; t < S; ++t) {
        T* z = gates_.data() + t * B * gates;
        const T* h = states_.data() + t * B * units;
        detail::product<D>(B, gates, features, xd + seq_.time(t) * features, std::ptrdiff_t(S * features), 1, kernel.data(), gates, 1, z, gates, false);
        if constexpr (has_bias) detail::add_bias(z, bias.data(), B, gates);
        detail::product<D>(B, gates, units, h, units, 1, recurrent_kernel.data(), gates, 1, z, gates, true);
        const T* c_prev = cells_.data() + t * B * units;
        T* c = cells_.data() + (t + 1) * B * units;
        T* h_next = states_.data() + (t + 1) * B * units;
        T* ac = cell_out_.data() + t * B * units;
        for (std::size_t b = 0; b < B; ++b) {
          if (seq_.skipped(b, t)) {
            std::copy_n(c_prev + b * units, units, c + b * units);
            std::copy_n(h + b * units, units, h_next + b * units);
            continue;
          }
          T* zb = z + b * gates;
          for (std::size_t j = 0; j < units; ++j) {
            const T i = fr::value(zb[j]), f = fr::value(zb[units + j]), g = fx::value(zb[2 * units + j]), o = fr::value(zb[3 * units + j]);
            zb[j] = i, zb[units + j] = f, zb[2 * units + j] = g, zb[3 * units + j] = o;
            const std::size_t k = b * units + j;
            c[k] = f * c_prev[k] + i * g;
            ac[k] = fx::value(c[k]);
            h_next[k] = o * ac[k];
          }
        }
        if constexpr (sequences)
          for (std::size_t b = 0; b < B; ++b) std::copy_n(h_next + b * units, units, out.data() + (b * S + t) * units);
      }
      if constexpr (!sequences) std::copy_n(states_.data() + S * B * units, B * units, out.data());
    }

    /// The backward pass through time of the forward that filled st (its input still valid), from the output's adjoint dy: the
    /// gradients of the targets that are not null (the input, then the weights).
    template <class DY, class Grads, class Targets> void backward(const DY& dy, Grads& grads, const Targets& targets, call_state& st) const {
      auto& [seq_, x_, gates_, cells_, states_, cell_out_, dh_, dc_, dz_] = st;
      const std::size_t B = seq_.batch, S = seq_.steps;
      T* dx = detail::gradient_slot(std::get<0>(grads), std::get<0>(targets));
      T* dw = detail::gradient_slot(std::get<1>(grads), std::get<1>(targets));
      T* du = detail::gradient_slot(std::get<2>(grads), std::get<2>(targets));
      T* db = nullptr;
      if constexpr (has_bias) db = detail::gradient_slot(std::get<3>(grads), std::get<3>(targets));
      dh_.assign(B * units, T(0));
      dc_.assign(B * units, T(0));
      dz_.resize(B * gates);
      for (std::size_t t = S; t-- > 0;) {
        if constexpr (sequences) {
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < units; ++j) dh_[b * units + j] += dy.data()[(b * S + t) * units + j];
        } else if (t + 1 == S) {
          std::copy_n(dy.data(), B * units, dh_.data());
        }
        const T* z = gates_.data() + t * B * gates;
        const T* c_prev = cells_.data() + t * B * units;
        const T* ac = cell_out_.data() + t * B * units;
        for (std::size_t b = 0; b < B; ++b) {
          const T* zb = z + b * gates;
          T* d = dz_.data() + b * gates;
          if (seq_.skipped(b, t)) {
            // The state passed through: h's and c's adjoints go on to the step before as they are.
            std::fill_n(d, gates, T(0));
            continue;
          }
          for (std::size_t j = 0; j < units; ++j) {
            const std::size_t k = b * units + j;
            const T i = zb[j], f = zb[units + j], g = zb[2 * units + j], o = zb[3 * units + j];
            const T dc = dc_[k] + dh_[k] * o * fx::derivative(ac[k]);
            d[j] = dc * g * fr::derivative(i);
            d[units + j] = dc * c_prev[k] * fr::derivative(f);
            d[2 * units + j] = dc * i * fx::derivative(g);
            d[3 * units + j] = dh_[k] * ac[k] * fr::derivative(o);
            dc_[k] = dc * f;
            dh_[k] = T(0);  // h_prev's adjoint comes from the product below
          }
        }
        const T* h_prev = states_.data() + t * B * units;
        const std::size_t s = seq_.time(t);
        if (dw) detail::product<D>(features, gates, B, x_ + s * features, 1, std::ptrdiff_t(S * features), dz_.data(), gates, 1, dw, gates, true);
        if (du) detail::product<D>(units, gates, B, h_prev, 1, units, dz_.data(), gates, 1, du, gates, true);
        detail::add_column_sums(db, dz_.data(), B, gates);
        if (dx) detail::product<D>(B, features, gates, dz_.data(), gates, 1, kernel.data(), 1, gates, dx + s * features, std::ptrdiff_t(S * features), false);
        if (t > 0) detail::product<D>(B, units, gates, dz_.data(), gates, 1, recurrent_kernel.data(), 1, gates, dh_.data(), units, true);
      }
    }

  };
};

}  // namespace ctflow::keras::layers
