// Differential testing of the devices: the same expression, written once as a generic lambda,
// evaluated on the CPU (SIMD loops, threads, block cache) and on the reference device (plain
// serial loops), over random shapes; the two results must agree.
#pragma once

#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>

namespace devices {

/// Random extents in [lo, hi], from one seeded stream per test.
struct extents {
  std::mt19937_64 rng;
  explicit extents(std::uint64_t seed) : rng(seed) {}
  std::size_t operator()(std::size_t lo, std::size_t hi) { return std::uniform_int_distribution<std::size_t>(lo, hi)(rng); }
};

/// A CPU tensor of dtype T with the given extents, uniform in [lo, hi).
template <class T, class S> ctflow::Tensor<T, S> uniform(const ctflow::dims_t<std::size_t(S::rank)>& d, std::uint64_t seed, double lo = -2, double hi = 2) {
  return ctflow::random_uniform<T, S>(seed, lo, hi, d);
}

/// Element i of t as a double.
template <class Tn> double at(const Tn& t, std::size_t i) { return double(ctflow::compute_t<ctflow::value_t<Tn>>(t.data()[i])); }

/// Both results agree element by element within tol (relative to 1 + |cpu|); NaN matches NaN,
/// and infinities match exactly.
template <class R, class C> void require_close(const R& on_reference, const C& on_cpu, double tol) {
  static_assert(std::is_same_v<ctflow::device_t<R>, ctflow::reference> && std::is_same_v<ctflow::device_t<C>, ctflow::cpu>);
  static_assert(std::is_same_v<ctflow::value_t<R>, ctflow::value_t<C>> && std::is_same_v<ctflow::shape_t<R>, ctflow::shape_t<C>>);
  REQUIRE(on_reference.dims() == on_cpu.dims());
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 0; i < on_cpu.size(); ++i) {
    const double r = at(on_reference, i), c = at(on_cpu, i);
    const bool same = (std::isnan(r) && std::isnan(c)) || (std::isinf(c) ? r == c : std::abs(r - c) <= tol * (1 + std::abs(c)));
    if (!same && mismatches++ == 0) first = i;
  }
  INFO("first mismatch at flat index " << first << " of " << ctflow::format_dims(on_cpu.dims()) << ": reference "
                                       << (on_cpu.size() ? at(on_reference, first) : 0.0) << ", cpu " << (on_cpu.size() ? at(on_cpu, first) : 0.0));
  REQUIRE(mismatches == 0);
}

/// f over the CPU inputs and over their copies on the reference device, evaluated on each, with
/// 1 and 2 CPU threads.
template <class F, class... X> void same_on_both(F f, double tol, const X&... cpu_inputs) {
  const auto ref_inputs = std::tuple{ctflow::to<ctflow::reference>(cpu_inputs)...};
  const auto on_reference = std::apply([&](const auto&... r) { return ctflow::eval(f(r...)); }, ref_inputs);
  for (int threads : {1, 2}) {
    ctflow::config::set_num_threads(threads);
    INFO(threads << " CPU thread(s)");
    const auto on_cpu = ctflow::eval(f(cpu_inputs...));
    require_close(on_reference, on_cpu, tol);
  }
}

/// The tolerance of float results; double results get 1e-12.
template <class T> constexpr double tolerance = std::is_same_v<T, double> ? 1e-12 : 2e-5;

}  // namespace devices
