#pragma once
/// @file
/// @brief keras.layers.GRU: a gated recurrent unit over [batch, timesteps, features], Keras's gate
/// order [z, r, h] in its kernel [features, 3 units] and recurrent kernel [units, 3 units]. With
/// reset_after (Keras's default) the bias is [2, 3 units], an input bias and a recurrent one:
///
///     xi = x_t @ kernel + bias[0];  hr = h @ recurrent_kernel + bias[1]
///     z = recurrent_activation(xi_z + hr_z);  r = recurrent_activation(xi_r + hr_r)
///     hh = activation(xi_h + r * hr_h);  h = z * h + (1 - z) * hh
///
/// Without it (`layers::reset_after<false>`) the bias is [3 units] and the candidate is
/// activation(xi_h + (r * h) @ recurrent_kernel_h). The output is the last h, or every step's with
/// return_sequences; the backward pass runs through time.

#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <ctflow/keras/layers/recurrent.hpp>

namespace ctflow::keras::layers {

/// @brief keras.layers.GRU(units, activation, recurrent_activation, use_bias, return_sequences,
/// go_backwards, reset_after, ...).
template <std::size_t Units, auto... Options> struct GRU {
  /// @brief The rank of its input (the batch axis included) and Keras's words for it.
  static constexpr std::size_t input_rank = 3;
  static constexpr const char* input_form = "[batch, timesteps, features] with static features";
  static_assert((detail::allowed<Options, detail::any_activation, detail::any_recurrent_activation, use_bias_t, return_sequences_t, go_backwards_t,
                                 reset_after_t> &&
                 ...),
                "ctflow::keras::GRU: options are an activation, layers::recurrent_activation<...>, layers::use_bias<...>, "
                "layers::return_sequences<...>, layers::go_backwards<...> and layers::reset_after<...>");
  static_assert(Units > 0, "ctflow::keras::GRU: units must be positive");
  static constexpr auto activation = detail::activation_or<activations::tanh, Options...>();
  static constexpr auto recurrent_activation = detail::recurrent_activation_option<Options...>();
  static constexpr bool has_bias = detail::option<use_bias_t, use_bias<true>, Options...>().on;
  static constexpr bool sequences = detail::option<return_sequences_t, return_sequences<false>, Options...>().on;
  static constexpr bool backwards = detail::option<go_backwards_t, go_backwards<false>, Options...>().on;
  static constexpr bool after = detail::option<reset_after_t, reset_after<true>, Options...>().on;

  CTFLOW_KERAS_LAYER_SPEC("GRU");
  initializers::Initializer kernel_initializer = initializers::GlorotUniform();
  initializers::Initializer recurrent_initializer = initializers::Orthogonal();
  initializers::Initializer bias_initializer = initializers::Zeros();
  regularizers::Regularizer kernel_regularizer{}, recurrent_regularizer{}, bias_regularizer{};

  /// @brief Keras's get_config: the RNN's flags, units, activations, use_bias, the initializers,
  /// the regularizers, no constraints, no dropout, reset_after and no seed.
  void get_config(config_dict& c) const {
    detail::recurrent_config_head<Units>(c, *this);
    detail::recurrent_config_tail(c, *this);
    c.set("reset_after", after).set("seed", nullptr);
  }

  template <class T, ShapeType In, class D = cpu> struct built {
    static_assert(In::rank == 3, "ctflow::keras::GRU: its input must be [batch, timesteps, features]");
    static_assert(host_device_v<D>, "ctflow::keras::GRU: its steps are loops on the host, so it runs on cpu and reference");
    static constexpr std::size_t features = In::extents[2], units = Units, gates = 3 * Units;
    static_assert(features != dyn, "ctflow::keras::GRU: the input's features (its last axis) must have a static extent");
    static constexpr const char* class_name = "GRU";
    using spec = GRU;  // its activations and flags
    static constexpr const char* cell_class_name = "GRUCell";
    static constexpr bool differentiates_itself = true;
    static constexpr bool consumes_mask = true;
    static constexpr bool supports_masking = sequences;
    using value_type = T;
    using device_type = D;
    using input_shape = In;
    using output_shape = detail::recurrent_output<In, Units, sequences>;
    /// The extents of the output for input extents in.
    static auto output_dims(const dims_t<3>& in) { return detail::recurrent_dims<Units, sequences>(in); }
    using bias_shape = std::conditional_t<after, Shape<2, gates>, Shape<gates>>;
    using fx = detail::scalar_of<activation>;
    using fr = detail::scalar_of<recurrent_activation>;

    regularizers::Regularizer kernel_regularizer, recurrent_regularizer, bias_regularizer;
    Variable<T, Shape<features, gates>, D> kernel;
    Variable<T, Shape<units, gates>, D> recurrent_kernel;
    std::conditional_t<has_bias, Variable<T, bias_shape, D>, std::monostate> bias;

    explicit built(const GRU& c)
        : kernel_regularizer(c.kernel_regularizer),
          recurrent_regularizer(c.recurrent_regularizer),
          bias_regularizer(c.bias_regularizer),
          kernel(c.kernel_initializer.template operator()<T, Shape<features, gates>, D>(), "kernel"),
          recurrent_kernel(c.recurrent_initializer.template operator()<T, Shape<units, gates>, D>(), "recurrent_kernel") {
      if constexpr (has_bias) bias = Variable<T, bias_shape, D>(c.bias_initializer.template operator()<T, bias_shape, D>(), "bias");
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
      // Per step: the activated gates [z, r, hh], what the candidate's adjoint needs (hr_h with
      // reset_after, else r * h) and the states (step 0: zeros); the backward pass's adjoints.
      std::vector<T> gates_, kept_, recurrent_, states_, dh_, dxi_, dhr_, drh_;
    };

    /// Runs the sequence x into out, keeping in st each step's gates and states for backward;
    /// mask: [batch, timesteps] (null: none).
    template <class X, class Out> void forward(const X& x, Out& out, bool /*training*/, call_state& st, const bool* mask = nullptr) const {
      auto& [seq_, x_, gates_, kept_, recurrent_, states_, dh_, dxi_, dhr_, drh_] = st;
      seq_ = {x.dims()[0], x.dims()[1], backwards, mask};
      const std::size_t B = seq_.batch, S = seq_.steps;
      if (S == 0) throw value_error("ctflow::keras::GRU: its input has no timesteps");
      keras::detail::resize(out, output_dims(x.dims()));
      gates_.resize(S * B * gates);
      kept_.resize(S * B * units);
      recurrent_.resize(B * gates);
      states_.assign((S + 1) * B * units, T(0));
      const T* xd = x_ = x.data();
      const T* U = recurrent_kernel.data();
      for (std::size_t t = 0; t < S; ++t) {
        T* z = gates_.data() + t * B * gates;
        T* kept = kept_.data() + t * B * units;
        const T* h = states_.data() + t * B * units;
        T* h_next = states_.data() + (t + 1) * B * units;
        T* hr = recurrent_.data();
        // xi = x_t @ kernel (+ the input bias).
        detail::product<D>(B, gates, features, xd + seq_.time(t) * features, std::ptrdiff_t(S * features), 1, kernel.data(), gates, 1, z, gates, false);
        if constexpr (has_bias) detail::add_bias(z, bias.data(), B, gates);
        if constexpr (after) {
          // hr = h @ recurrent_kernel + the recurrent bias; the candidate takes r * hr_h.
          detail::product<D>(B, gates, units, h, units, 1, U, gates, 1, hr, gates, false);
          if constexpr (has_bias) detail::add_bias(hr, bias.data() + gates, B, gates);
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < units; ++j) {
              T* zb = z + b * gates;
              const T* rb = hr + b * gates;
              const std::size_t k = b * units + j;
              const T zg = fr::value(zb[j] + rb[j]), r = fr::value(zb[units + j] + rb[units + j]);
              const T hh = fx::value(zb[2 * units + j] + r * rb[2 * units + j]);
              zb[j] = zg, zb[units + j] = r, zb[2 * units + j] = hh;
              kept[k] = rb[2 * units + j];
              h_next[k] = zg * h[k] + (T(1) - zg) * hh;
            }
        } else {
          // z and r from h @ recurrent_kernel[:, :2u]; the candidate from (r * h) @ recurrent_kernel[:, 2u:].
          detail::product<D>(B, 2 * units, units, h, units, 1, U, gates, 1, z, gates, true);
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < units; ++j) {
              T* zb = z + b * gates;
              const std::size_t k = b * units + j;
              zb[j] = fr::value(zb[j]);
              zb[units + j] = fr::value(zb[units + j]);
              kept[k] = zb[units + j] * h[k];
            }
          detail::product<D>(B, units, units, kept, units, 1, U + 2 * units, gates, 1, z + 2 * units, gates, true);
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < units; ++j) {
              T* zb = z + b * gates;
              const std::size_t k = b * units + j;
              zb[2 * units + j] = fx::value(zb[2 * units + j]);
              h_next[k] = zb[j] * h[k] + (T(1) - zb[j]) * zb[2 * units + j];
            }
        }
        for (std::size_t b = 0; b < B; ++b)
          if (seq_.skipped(b, t)) std::copy_n(h + b * units, units, h_next + b * units);
        if constexpr (sequences)
          for (std::size_t b = 0; b < B; ++b) std::copy_n(h_next + b * units, units, out.data() + (b * S + t) * units);
      }
      if constexpr (!sequences) std::copy_n(states_.data() + S * B * units, B * units, out.data());
    }

    /// The backward pass through time of the forward that filled st (its input still valid), from the
    /// output's adjoint dy: the gradients of the targets that are not null (the input, then the
    /// weights).
    template <class DY, class Grads, class Targets> void backward(const DY& dy, Grads& grads, const Targets& targets, call_state& st) const {
      auto& [seq_, x_, gates_, kept_, recurrent_, states_, dh_, dxi_, dhr_, drh_] = st;
      const std::size_t B = seq_.batch, S = seq_.steps;
      T* dx = detail::gradient_slot(std::get<0>(grads), std::get<0>(targets));
      T* dw = detail::gradient_slot(std::get<1>(grads), std::get<1>(targets));
      T* du = detail::gradient_slot(std::get<2>(grads), std::get<2>(targets));
      T* db = nullptr;
      if constexpr (has_bias) db = detail::gradient_slot(std::get<3>(grads), std::get<3>(targets));
      const T* U = recurrent_kernel.data();
      dh_.assign(B * units, T(0));
      dxi_.resize(B * gates);
      dhr_.resize(B * gates);
      drh_.resize(B * units);
      for (std::size_t t = S; t-- > 0;) {
        if constexpr (sequences) {
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < units; ++j) dh_[b * units + j] += dy.data()[(b * S + t) * units + j];
        } else if (t + 1 == S) {
          std::copy_n(dy.data(), B * units, dh_.data());
        }
        const T* z = gates_.data() + t * B * gates;
        const T* kept = kept_.data() + t * B * units;
        const T* h_prev = states_.data() + t * B * units;
        // dh_ becomes the adjoint of h_prev: its direct part here, the products' below.
        for (std::size_t b = 0; b < B; ++b) {
          if (seq_.skipped(b, t)) {
            // The state passed through: h's adjoint goes on to the step before as it is.
            std::fill_n(dxi_.data() + b * gates, gates, T(0));
            if constexpr (after) std::fill_n(dhr_.data() + b * gates, gates, T(0));
            continue;
          }
          for (std::size_t j = 0; j < units; ++j) {
            const std::size_t k = b * units + j;
            const T* zb = z + b * gates;
            const T zg = zb[j], hh = zb[2 * units + j], dh = dh_[k];
            const T dz = dh * (h_prev[k] - hh) * fr::derivative(zg), dhh = dh * (T(1) - zg) * fx::derivative(hh);
            T* dxi = dxi_.data() + b * gates;
            dxi[j] = dz, dxi[2 * units + j] = dhh;
            if constexpr (after) {
              const T r = zb[units + j];
              const T dr = dhh * kept[k] * fr::derivative(r);
              T* dhr = dhr_.data() + b * gates;
              dxi[units + j] = dr;
              dhr[j] = dz, dhr[units + j] = dr, dhr[2 * units + j] = dhh * r;
            }
            dh_[k] = dh * zg;
          }
        }
        if constexpr (!after) {
          // d(r * h) = dhh @ recurrent_kernel_h^T; then r's adjoint, and h's through r * h.
          detail::product<D>(B, units, units, dxi_.data() + 2 * units, gates, 1, U + 2 * units, 1, gates, drh_.data(), units, false);
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t j = 0; j < units; ++j) {
              const std::size_t k = b * units + j;
              const T r = z[b * gates + units + j];
              dxi_[b * gates + units + j] = drh_[k] * h_prev[k] * fr::derivative(r);
              dh_[k] += drh_[k] * r;
            }
        }
        const std::size_t s = seq_.time(t);
        if (dw) detail::product<D>(features, gates, B, x_ + s * features, 1, std::ptrdiff_t(S * features), dxi_.data(), gates, 1, dw, gates, true);
        if (dx) detail::product<D>(B, features, gates, dxi_.data(), gates, 1, kernel.data(), 1, gates, dx + s * features, std::ptrdiff_t(S * features), false);
        detail::add_column_sums(db, dxi_.data(), B, gates);
        if constexpr (after) {
          if (du) detail::product<D>(units, gates, B, h_prev, 1, units, dhr_.data(), gates, 1, du, gates, true);
          detail::add_column_sums(db ? db + gates : nullptr, dhr_.data(), B, gates);
          detail::product<D>(B, units, gates, dhr_.data(), gates, 1, U, 1, gates, dh_.data(), units, true);
        } else {
          if (du) {
            detail::product<D>(units, 2 * units, B, h_prev, 1, units, dxi_.data(), gates, 1, du, gates, true);
            detail::product<D>(units, units, B, kept, 1, units, dxi_.data() + 2 * units, gates, 1, du + 2 * units, gates, true);
          }
          detail::product<D>(B, units, 2 * units, dxi_.data(), gates, 1, U, 1, gates, dh_.data(), units, true);
        }
      }
    }

  };
};

}  // namespace ctflow::keras::layers
