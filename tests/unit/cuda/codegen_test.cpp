// The cuda backend's code generation without a GPU: each expression's generated source is
// compiled by the host's C++ compiler against a shim of the CUDA names it uses (host_shim.hpp),
// run on the CPU as a grid of blocks of threads, and must equal the reference device (the same
// arithmetic, FMA contraction aside) and the cpu device (SIMD math, within tolerance), over random
// extents, dyn axes, every broadcasting pattern, strided views, boundary ops as inputs, the
// gradient chains of the autodiff rules and each dtype. NVRTC compiles every one of those sources
// for sm_90 (with no register spills) and compute_90; a few sources are compared with committed
// golden files.
#include "../devices/devices.hpp"

#include <ctflow/backend/cuda/codegen.hpp>
#include <ctflow/backend/cuda/kernel_cache.hpp>
#include <ctflow/backend/cuda/nvrtc.hpp>

#include "host_compile.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace ctflow;
namespace gen = ctflow::backend::cuda;
using devices::extents;
using devices::uniform;

using D3 = Shape<dyn, dyn, dyn>;
using D2 = Shape<dyn, dyn>;
using D1 = Shape<dyn>;

namespace {

/// Generated sources built into one shared library by the host's compiler and loaded.
class host_kernels {
 public:
  template <class E> void add() {
    const gen::generated_kernel& k = gen::kernel_for<E>();
    for (const auto* s : kernels_)
      if (s->name == k.name) return;
    kernels_.push_back(&k);
  }
  const std::vector<const gen::generated_kernel*>& kernels() const { return kernels_; }
  void build() { library_ = host_compile::build(kernels_); }
  host_compile::entry_fn entry(const std::string& name) const { return host_compile::entry(library_, name); }

 private:
  std::vector<const gen::generated_kernel*> kernels_;
  void* library_ = nullptr;
};

/// Runs e's kernel on the host into out (grid 3 of 32 threads: every thread loops over several
/// elements and the last pass has a tail); entry `form` replaces the one the launch chose. Returns
/// the status the kernel set.
template <class E> int run_on_host(const host_kernels& m, const E& e, value_t<E>* out, const char* form = nullptr) {
  std::vector<std::shared_ptr<void>> keep;
  auto view_of = [&](const auto& node) {
    auto ev = std::make_shared<ctflow::evaluator<std::remove_cvref_t<decltype(node)>, reference>>(node);
    keep.push_back(ev);
    return ev->view();
  };
  auto launch = gen::launch_for(out, e.dims(), e, view_of);
  if (form) launch.entry = launch.entry.substr(0, launch.entry.rfind('_') + 1) + form;
  const detail::kernel_float_environment environment;  // as the reference device's loops run
  return m.entry(launch.entry)(launch.args.data(), 3, 32);
}

/// How many comparisons ran the vector loop (the launch chose it).
std::size_t vector_runs = 0;

/// The form of the entry point the launch of e into out chooses ("vector32", "strided64", ...).
template <class E> std::string chosen_form(const host_kernels&, const E& e, value_t<E>* out) {
  std::vector<std::shared_ptr<void>> keep;
  auto view_of = [&](const auto& node) {
    auto ev = std::make_shared<ctflow::evaluator<std::remove_cvref_t<decltype(node)>, reference>>(node);
    keep.push_back(ev);
    return ev->view();
  };
  const std::string entry = gen::launch_for(out, e.dims(), e, view_of).entry;
  return entry.substr(entry.rfind('_') + 1);
}

template <class T> double as_double(const T& v) { return double(compute_t<T>(v)); }

/// got and want agree within tol relative to 1 + |want| (0: exactly); NaN matches NaN.
template <class T> void require_close(const T* got, const T* want, std::size_t n, double tol, const char* what) {
  std::size_t mismatches = 0, first = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = as_double(got[i]), w = as_double(want[i]);
    const bool same = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= tol * (1 + std::abs(w));
    if (!same && mismatches++ == 0) first = i;
  }
  INFO(what << ": first mismatch at " << first << " of " << n << ": generated " << (n ? as_double(got[first]) : 0.0) << ", expected "
            << (n ? as_double(want[first]) : 0.0));
  REQUIRE(mismatches == 0);
}

/// The generated kernel's result on the host against the reference and cpu devices, in the form
/// the launch chose and in the others: the strided 64-bit loop (and the linear one where the
/// launch chose the vector loop); a reduction's loops per thread and per block.
template <class E> void compare(const host_kernels& m, const E& e, double tol) {
  using T = value_t<E>;
  const auto d = e.dims();
  const std::size_t n = product(d);
  std::unique_ptr<T[]> got(new T[n]), other(new T[n]), want(new T[n]), on_cpu(new T[n]);
  executor<reference>::assign(want.get(), d, e);
  executor<cpu>::assign(on_cpu.get(), d, e);
  REQUIRE(run_on_host(m, e, got.get()) == 0);
  // The same arithmetic as the reference device's loops but for contraction into FMA.
  const double same = is_floating_v<T> ? (sizeof(T) == 2 ? 1e-2 : sizeof(T) == 4 ? 1e-6 : 1e-14) : 0.0;
  require_close(got.get(), want.get(), n, same, "against the reference device");
  require_close(got.get(), on_cpu.get(), n, tol, "against the cpu device");
  if constexpr (gen::detail::generated_reduction<std::remove_cvref_t<E>>::value) {
    for (const char* form : {"thread32", "block64"}) {
      INFO(form);
      REQUIRE(run_on_host(m, e, other.get(), form) == 0);
      // Per block the combining order differs: products of float, as the cpu device's sums, round apart.
      require_close(other.get(), want.get(), n, form[0] == 'b' ? 10 * same : same, "a reduction's other loop against the reference device");
    }
  } else {
    REQUIRE(run_on_host(m, e, other.get(), "strided64") == 0);
    require_close(other.get(), got.get(), n, 0.0, "the strided 64-bit loop against the chosen one");
    if (chosen_form(m, e, got.get()) == "vector32") {
      ++vector_runs;
      REQUIRE(run_on_host(m, e, other.get(), "linear64") == 0);
      require_close(other.get(), got.get(), n, 0.0, "the linear 64-bit loop against the vector one");
    }
  }
}

/// Checks registered first, their kernels built into one library, then run.
struct suite {
  host_kernels module;
  std::vector<std::pair<std::string, std::function<void()>>> checks;

  template <class F, class... X> void check(std::string label, F f, double tol, const X&... inputs) {
    module.add<std::remove_cvref_t<decltype(f(inputs...))>>();
    checks.emplace_back(std::move(label), [this, f, tol, inputs...] { compare(module, f(inputs...), tol); });
  }
  void run() {
    module.build();
    for (const auto& [label, c] : checks) {
      INFO(label);
      c();
    }
  }
};

/// Random extents, inputs and cases of every kind; the same suite for the NVRTC test.
void add_cases(suite& s) {
  extents ext(43);
  for (int trial = 0; trial < 3; ++trial) {
    const std::size_t a = ext(1, 4), b = ext(1, 19), c = ext(1, 37);
    const std::string at = " (extents " + std::to_string(a) + " x " + std::to_string(b) + " x " + std::to_string(c) + ")";
    const auto x = uniform<float, D3>({a, b, c}, 1 + trial), y = uniform<float, D3>({a, b, c}, 2 + trial);
    const auto row = uniform<float, D1>({c}, 3 + trial);
    const auto column = uniform<float, D2>({b, 1}, 4 + trial);
    const auto positive = uniform<float, D3>({a, b, c}, 5 + trial, 0.1, 3);
    const double tol = 2e-5;
    s.check("arithmetic" + at, [](const auto& p, const auto& q) { return p * q + p - q / (abs(q) + 1.f); }, tol, x, y);
    s.check("a row broadcast" + at, [](const auto& p, const auto& r) { return p + r; }, tol, x, row);
    s.check("a column broadcast" + at, [](const auto& p, const auto& k) { return (p - k) * k; }, tol, x, column);
    s.check("row by column" + at, [](const auto& r, const auto& k) { return r * k; }, tol, row, column);
    s.check("exp and logs" + at, [](const auto& p) { return exp(p) + log1p(abs(p)) + expm1(p * 0.5f) + sin(p) * cos(p); }, 4 * tol, x);
    s.check("activations" + at, [](const auto& p) { return tanh(p) + sigmoid(p) + softplus(p) + softsign(p) + swish(p); }, 4 * tol, x);
    s.check("more activations" + at, [](const auto& p) { return elu(p) + selu(p) + gelu(p) + erf(p) + leaky_relu(p, 0.3) - leaky_relu(p, 0.1); }, 4 * tol, x);
    s.check("piecewise" + at, [](const auto& p) { return relu(p) + relu6(p * 4.f) + sign(p) + square(p) + negative(p); }, tol, x);
    s.check("rounding" + at, [](const auto& p) { return floor(p * 3.f) + ceil(p * 3.f) + round(p * 3.f); }, tol, x);
    s.check("roots and powers" + at, [](const auto& p) { return sqrt(p) + rsqrt(p) + log(p) + pow(p, p); }, 4 * tol, positive);
    s.check("where and comparisons" + at, [](const auto& p, const auto& q) { return where(p > q, p, q * 3.f) + where(p <= 0.f, 1.f, p); }, tol, x, y);
    s.check("logic to bool" + at, [](const auto& p, const auto& q) { return logical_or(logical_and(p > 0.f, q < 0.f), equal(p, q)); }, 0, x, y);
    s.check("casts" + at, [](const auto& p) { return cast<std::int32_t>(p * 10.f) + cast<std::int32_t>(cast<bool>(floor(p))); }, 0, x);
    s.check("a transposed view" + at, [](const auto& p, const auto& q) { return transpose<2, 1, 0>(p) * 2.f + transpose(q); }, tol, x, y);
    s.check("a slice and a reverse" + at, [](const auto& p, const auto& q) { return reverse<2>(p) - strided_slice(q, {0, 0, 0}, {4, 19, 37}, {1, 1, 1}); }, tol, x, y);
    s.check("a broadcast_to view" + at, [](const auto& r, const auto& k) { return broadcast_to<D2>(r, {k.dims()[0], r.dims()[0]}) + 1.f; }, tol, row, column);
    s.check("a boundary op as an input" + at, [](const auto& p, const auto& q) { return tanh(reduce_sum<2>(p * q)) * 2.f; }, 4 * tol, x, y);
    s.check("reduce_sum of a fused operand" + at, [](const auto& p, const auto& q) { return reduce_sum<2>(p * q - 1.f); }, 1e-4, x, y);
    s.check("reduce_mean over two axes" + at, [](const auto& p) { return reduce_mean<0, 2>(p); }, 1e-4, x);
    s.check("reduce_max keepdims, reduce_min of all" + at, [](const auto& p, const auto& q) { return reduce_max<1>(p - q, keepdims); }, 0, x, y);
    s.check("reduce_min of all" + at, [](const auto& p) { return reduce_min(exp(p)); }, tol, x);
    s.check("reduce_prod" + at, [](const auto& p) { return reduce_prod<2>(p * 0.25f + 1.f); }, 1e-4, x);
    s.check("reduce_sum of a broadcast and a view" + at, [](const auto& p, const auto& r) { return reduce_sum<0, 1>(reverse<1>(p) + r); }, 1e-4, x, row);
    s.check("reduce_any and reduce_all" + at, [](const auto& p) { return reduce_any<1>(p > 1.5f); }, 0, x);
    s.check("reduce_all" + at, [](const auto& p, const auto& q) { return reduce_all<0, 2>(p < q + 3.f); }, 0, x, y);
    s.check("a broadcast's gradient (sum_to)" + at, [](const auto& p, const auto& r) { return std::get<0>(grad(reduce_sum(p * r), r)); }, 1e-4, x, row);
    s.check("a gradient chain" + at, [](const auto& p, const auto& q) { return std::get<0>(grad(reduce_sum(sigmoid(p) * q + square(tanh(p))), p)); }, 4 * tol, x, y);
  }
  // The dtypes: float64, integers (int8's -128 included), bool, the 16-bit floats.
  const auto d1 = uniform<double, D2>({5, 13}, 11), d2 = uniform<double, D2>({5, 13}, 12);
  s.check("float64", [](const auto& p, const auto& q) { return exp(p) * q - tanh(q) / (abs(p) + 1.0); }, 1e-12, d1, d2);
  const auto i = eval(cast<std::int32_t>(uniform<float, D2>({6, 11}, 13, -50, 50))), j = eval(cast<std::int32_t>(uniform<float, D2>({6, 11}, 14, 1, 9)));
  s.check("int32", [](const auto& p, const auto& q) { return p * q - p / q + maximum(p, q) - minimum(p, -q) + abs(p) + pow(q, 3); }, 0, i, j);
  Tensor<std::int8_t, Shape<6>> small;
  const std::int8_t small_values[] = {-128, -1, 0, 1, 100, 127};
  for (std::size_t k = 0; k < 6; ++k) small.data()[k] = small_values[k];
  s.check("int8 wraps as the host does", [](const auto& p) { return abs(p) + negative(p) * std::int8_t(3); }, 0, small);
  const auto h = eval(cast<bfloat16>(uniform<float, D2>({7, 9}, 15))), g = eval(cast<bfloat16>(uniform<float, D2>({7, 9}, 16)));
  s.check("bfloat16", [](const auto& p, const auto& q) { return p * q + exp(p) - 1.f; }, 1e-2, h, g);
  const auto f16 = eval(cast<float16>(uniform<float, D2>({7, 9}, 17, -8, 8)));
  s.check("float16", [](const auto& p) { return cast<float16>(cast<float>(p) * 1000.f) + sigmoid(p); }, 1e-2, f16);
  s.check("int32 sum and mean (truncating)", [](const auto& p) { return reduce_sum<1>(p) + reduce_mean<1>(p); }, 0, i);
  s.check("float64 mean", [](const auto& p) { return reduce_mean<0>(p * p); }, 1e-12, d1);
  s.check("bfloat16 sum", [](const auto& p) { return reduce_sum<1>(p); }, 1e-2, h);
  s.check("float16 max", [](const auto& p) { return reduce_max<0>(p); }, 0, f16);
  s.check("int64 sum", [](const auto& p) { return reduce_sum<1>(cast<std::int64_t>(p)); }, 0, i);
  s.check("uint8 mean", [](const auto& p) { return reduce_mean<1>(cast<std::uint8_t>(p)); }, 0, j);
  s.check("int8 max", [](const auto& p) { return reduce_max<0>(p); }, 0, small);
  // Casts at the edges: NaN, infinities, out of range, halves.
  Tensor<float, Shape<10>> edges;
  const float edge_values[] = {std::nanf(""), INFINITY, -INFINITY, 3e9f, -3e9f, 2.5f, -2.5f, 0.5f, -0.f, 1e-30f};
  for (std::size_t k = 0; k < 10; ++k) edges.data()[k] = edge_values[k];
  s.check("casts at the edges", [](const auto& p) { return cast<std::int32_t>(p); }, 0, edges);
  s.check("casts to 8 bits", [](const auto& p) { return cast<std::uint8_t>(cast<std::int16_t>(cast<std::int64_t>(p * 1e-7f))); }, 0, edges);
  s.check("casts to bool and 16 bits", [](const auto& p) { return cast<float>(cast<bool>(p)) + cast<float>(cast<float16>(p)) - cast<float>(cast<bfloat16>(p)); }, 0, edges);
  // A static shape, numbers only, a rank-0 result.
  const auto st = random_uniform<float, Shape<4, 3>>(18, -1, 1);
  s.check("a static shape and numbers only", [](const auto& p) { return p * 0.f + 2.f; }, 0, st);
  s.check("a rank-0 result", [](const auto& p) { return reduce_max(p) + 1.f; }, 0, st);
  s.check("a reduction to rank 0", [](const auto& p) { return reduce_sum(p); }, 1e-5, st);
}

/// What a golden file holds of a source: the part its expression decides (the argument struct,
/// the functors, the element's value), from the end of the prelude to the first comment line (the
/// loops, the same for every expression of a kind, and the entry points).
std::string body_of(const std::string& source) {
  const std::size_t begin = source.find(gen::prelude) + std::string(gen::prelude).size();
  return source.substr(begin, source.find("\n//", begin) + 1 - begin);
}

}  // namespace

TEST_CASE("cuda codegen: generated kernels run on the host equal the reference and cpu devices") {
  suite s;
  add_cases(s);
  REQUIRE(s.module.kernels().size() > 20);
  s.run();
  CHECK(vector_runs > 20);
}

TEST_CASE("cuda codegen: an invalid integer operation is reported by the kernel, named by its functors") {
  suite s;
  const auto p = eval(cast<std::int32_t>(uniform<float, D1>({40}, 31, 1, 9)));
  Tensor<std::int32_t, D1> q = p * 0;
  using Div = decltype(p / q);
  s.module.add<Div>();
  s.module.add<decltype(pow(p, q - 1))>();
  s.module.add<decltype(p / (q + 1))>();
  s.module.build();
  const auto& k = gen::kernel_for<Div>();
  REQUIRE(k.failures == std::vector<std::string>{"ctflow::divide: integer division by zero"});
  std::vector<std::int32_t> out(40);
  CHECK(run_on_host(s.module, p / q, out.data()) == 1);
  auto on_cpu = [&] { return Tensor<std::int32_t, D1>(p / q); };
  CHECK_THROWS_WITH(on_cpu(), "ctflow::divide: integer division by zero");
  CHECK(run_on_host(s.module, p / (q + 1), out.data()) == 0);
  CHECK(out[7] == p.data()[7]);
  CHECK(run_on_host(s.module, pow(p, q - 1), out.data()) == 1);
  CHECK(gen::kernel_for<decltype(pow(p, q - 1))>().failures ==
        std::vector<std::string>{"ctflow::pow: integers cannot be raised to negative powers"});
}

TEST_CASE("cuda codegen: one source per expression type; extents, strides and numbers are arguments") {
  Tensor<float, D2> a({3, 4}), b({5, 7});
  Tensor<float, Shape<4>> r;
  // The same type at other extents and numbers: the same source.
  REQUIRE(cuda::kernel_source(a * 2.f + a) == cuda::kernel_source(b * 5.f + b));
  REQUIRE(cuda::kernel_source(a * 2.f) != cuda::kernel_source(a + 2.f));
  REQUIRE(cuda::kernel_source(a * 2.f) != cuda::kernel_source(cast<double>(a) * 2.0));
  // The launch: linear where every input is laid out as the output, strided where one broadcasts.
  std::vector<float> out(12);
  auto own = [](const auto& t) { return expr::strided_view<float, 2>{t.data(), t.dims(), t.strides()}; };
  auto own1 = [](const auto& t) { return expr::strided_view<float, 1>{t.data(), t.dims(), t.strides()}; };
  const auto linear = gen::launch_for(out.data(), a.dims(), a * 2.f + a, own);
  const auto strided = gen::launch_for(out.data(), a.dims(), a * 2.f + r, [&](const auto& t) {
    if constexpr (rank_v<decltype(t)> == 1) return own1(t);
    else return own(t);
  });
  CHECK(linear.entry == gen::kernel_for<decltype(a * 2.f + a)>().name + "_vector32");
  CHECK(strided.entry == gen::kernel_for<decltype(a * 2.f + r)>().name + "_strided32");
  CHECK(linear.items == 3);  // four elements a thread
  // Vector reads and writes need every address aligned to four elements (std::vector's memory is
  // aligned to 16 bytes): an output or an input one float on takes the linear loop.
  Tensor<float, D1> v({11});
  const std::string name = gen::kernel_for<decltype(v * 2.f)>().name;
  const auto aligned = gen::launch_for(out.data(), v.dims(), v * 2.f, own1);
  CHECK(aligned.entry == name + "_vector32");
  CHECK(aligned.items == 3);  // the last thread's quad is the tail of 3
  CHECK(gen::launch_for(out.data() + 1, v.dims(), v * 2.f, own1).entry == name + "_linear32");
  const auto shifted = [](const auto& t) { return expr::strided_view<float, 1>{t.data() + 1, t.dims(), t.strides()}; };
  CHECK(gen::launch_for(out.data(), v.dims(), v * 2.f, shifted).entry == name + "_linear32");
  // out, n, dims[2], two input pointers, strides[2][2], one float scalar: padded to 8 bytes.
  CHECK(linear.args.size() == 8 + 8 + 16 + 16 + 32 + 8);
}

TEST_CASE("cuda codegen: sources equal the committed golden files") {
  Tensor<float, D2> x({2, 3});
  Tensor<float, D1> row({3});
  Tensor<bfloat16, D2> h({2, 3});
  const std::pair<const char*, std::string> cases[] = {
      {"add_broadcast.cu", cuda::kernel_source(x + row)},
      {"leaky_relu_scalar.cu", cuda::kernel_source(leaky_relu(x * 2.f, 0.3))},
      {"where_cast_bfloat16.cu", cuda::kernel_source(where(cast<float>(h) > 0.f, cast<float>(h), exp(x)))},
      {"int_divide.cu", cuda::kernel_source(cast<std::int32_t>(x) / cast<std::int32_t>(row))},
      {"sigmoid_gradient.cu", cuda::kernel_source(std::get<0>(grad(reduce_sum(sigmoid(x)), x)))},
      {"reduce_mean_square.cu", cuda::kernel_source(reduce_mean<1>(x * x))},
  };
  const bool update = std::getenv("CTFLOW_UPDATE_GOLDEN") != nullptr;
  for (const auto& [file, source] : cases) {
    const std::string path = std::string(CTFLOW_CUDA_GOLDEN_DIR) + "/" + file;
    INFO(path << " (CTFLOW_UPDATE_GOLDEN=1 rewrites it after a deliberate change)");
    if (update) std::ofstream(path) << body_of(source);
    std::stringstream golden;
    golden << std::ifstream(path).rdbuf();
    CHECK(body_of(source) == golden.str());
  }
}

TEST_CASE("cuda codegen: NVRTC compiles every generated kernel for sm_90 without spills and for compute_90") {
  if (!gen::nvrtc_available()) {
    WARN("skipped: NVRTC is not installed here");
    return;
  }
  suite s;
  add_cases(s);
  // One program of every source, each in a namespace of its own, as the host test builds them
  // (NVRTC's start-up paid once); each kernel alone compiles the same.
  std::string all;
  for (std::size_t i = 0; i < s.module.kernels().size(); ++i) all += "namespace k" + std::to_string(i) + " {\n" + s.module.kernels()[i]->source + "\n}\n";
  const auto cubin = gen::compile(all, "kernels.cu", "sm_90", {"--ptxas-options=-v"});
  CHECK(!cubin.binary.empty());
  // ptxas reports "N bytes spill stores, M bytes spill loads" for each entry point.
  std::size_t reports = 0;
  for (std::size_t at = cubin.log.find(" bytes spill stores"); at != std::string::npos; at = cubin.log.find(" bytes spill stores", at + 1), ++reports) {
    const std::size_t begin = cubin.log.rfind(' ', at - 1) + 1;
    INFO(cubin.log.substr(cubin.log.rfind('\n', begin) + 1, at - cubin.log.rfind('\n', begin) + 19));
    CHECK(cubin.log.substr(begin, at - begin) == "0");
  }
  // Six entry points an element-wise kernel, four a reduction's.
  const auto entries_of = [](const gen::generated_kernel& k) { return k.source.find("_vector32") != std::string::npos ? 6u : 4u; };
  std::size_t expected = 0;
  for (const auto* k : s.module.kernels()) expected += entries_of(*k);
  CHECK(reports == expected);
  const auto ptx = gen::compile(all, "kernels.cu", "compute_90");
  const std::string text(ptx.binary.begin(), ptx.binary.end());
  for (const auto* k : s.module.kernels()) {
    std::size_t entries = 0;
    for (std::size_t at = text.find(".entry " + k->name); at != std::string::npos; at = text.find(".entry " + k->name, at + 1)) ++entries;
    CHECK(entries == entries_of(*k));
  }
  // The vector loop of float inputs reads each in one 16-byte access and writes four at once.
  Tensor<float, D2> x({2, 3}), y({2, 3});
  const auto& add = gen::kernel_for<decltype(x * y + 1.f)>();
  const auto add_ptx = gen::compile(add.source, add.name + ".cu", "compute_90");
  const std::string add_text(add_ptx.binary.begin(), add_ptx.binary.end());
  const std::size_t vector_entry = add_text.find(".entry " + add.name + "_vector32");
  REQUIRE(vector_entry != std::string::npos);
  const std::string vector_body = add_text.substr(vector_entry, add_text.find(".entry", vector_entry + 1) - vector_entry);
  INFO(vector_body);
  CHECK(vector_body.find(".v4.f32") != std::string::npos);
  CHECK(vector_body.find("st.global.v4.f32") != std::string::npos);
  // One kernel alone, as the device compiles it.
  const auto* one = s.module.kernels().front();
  CHECK(!gen::compile(one->source, one->name + ".cu", "sm_90").binary.empty());
}
