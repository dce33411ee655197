// The cuda device as users write it: where there is no driver, a program's CPU work runs and the
// GPU is a device_error saying why; on a GPU (the driver's where there is one, else one emulated
// on the host, its kernels the generated source compiled by the host's compiler),
// Tensor<T, S, cuda>, to<cuda> and to<cpu>, assignments of element-wise expressions, views,
// reductions and matmul, in-place updates, element access, item(), printing, an invalid integer
// operation, gradients and an optimizer's update all give what the cpu device gives, a reduction
// repeats bitwise, and a repeated step takes no memory from the device.
#include "../devices/devices.hpp"

#include <ctflow/backend/cuda/cuda.hpp>

#include <cstring>
#include <memory>
#include <sstream>

#include "emulated_runtime.hpp"

using namespace ctflow;
namespace gen = ctflow::backend::cuda;
using devices::uniform;

using D3 = Shape<dyn, dyn, dyn>;
using D2 = Shape<dyn, dyn>;
using D1 = Shape<dyn>;

namespace {

/// A device tensor's values, copied back, against the cpu device's.
template <class G, class C> void require_equal(const G& on_gpu, const C& on_cpu, double tol) {
  const auto back = to<cpu>(on_gpu);
  REQUIRE(back.dims() == on_cpu.dims());
  for (std::size_t i = 0; i < back.size(); ++i) {
    const double g = devices::at(back, i), c = devices::at(on_cpu, i);
    INFO("element " << i << " of " << format_dims(back.dims()));
    REQUIRE(std::abs(g - c) <= tol * (1 + std::abs(c)));
  }
}

/// Where the emulation ran the kernels and NVRTC is here: NVRTC compiles every one of them for
/// sm_90, with no register spills.
void nvrtc_compiles(const gpu_under_test& scope) {
  if (!scope.gpu || !gen::nvrtc_available()) return;
  std::string all;
  for (std::size_t i = 0; i < scope.gpu->ran.size(); ++i) all += "namespace k" + std::to_string(i) + " {\n" + scope.gpu->ran[i]->source + "\n}\n";
  const auto cubin = gen::compile(all, "kernels.cu", "sm_90", {"--ptxas-options=-v"});
  CHECK(!cubin.binary.empty());
  CHECK(cubin.log.find(" bytes spill stores") != std::string::npos);
  for (std::size_t at = cubin.log.find(" bytes spill stores"); at != std::string::npos; at = cubin.log.find(" bytes spill stores", at + 1))
    CHECK(cubin.log.substr(cubin.log.rfind(' ', at - 1) + 1, at - cubin.log.rfind(' ', at - 1) - 1) == "0");
}

}  // namespace

TEST_CASE("cuda device: with no driver the CPU work runs and the GPU is a device_error that says why") {
  if (gen::driver_available()) {
    WARN("skipped: a CUDA driver is here (the GPU tests run on it)");
    return;
  }
  const auto x = uniform<float, D2>({3, 4}, 1);
  const Tensor<float, D2> y = x * 2.f;
  CHECK(y(1, 2) == x(1, 2) * 2.f);
  CHECK_THROWS_AS(to<cuda>(x), device_error);
  CHECK_THROWS_WITH(to<cuda>(x), Catch::Contains("the CUDA driver is not available") && Catch::Contains("libcuda.so.1"));
  // Asked again: the same reason, and the CPU still works.
  auto zeros = [] { return Tensor<float, Shape<2, 2>, cuda>(); };
  CHECK_THROWS_WITH(zeros(), Catch::Contains("the CUDA driver is not available"));
  CHECK(eval(x + 1.f)(0, 0) == x(0, 0) + 1.f);
}

TEST_CASE("cuda device (a GPU, or one emulated on the host): expressions as users write them equal the cpu device") {
  gpu_under_test scope;
  const auto x = uniform<float, D3>({3, 17, 29}, 1), y = uniform<float, D3>({3, 17, 29}, 2);
  const auto row = uniform<float, D1>({29}, 3);
  const Tensor<float, D3, cuda> gx = to<cuda>(x), gy = to<cuda>(y);
  const Tensor<float, D1, cuda> grow = to<cuda>(row);
  const double tol = 2e-5;

  SECTION("an expression assigned to a tensor, broadcasting, in-place updates") {
    Tensor<float, D3, cuda> z = relu(gx) * 2.f + gy - grow;
    require_equal(z, eval(relu(x) * 2.f + y - row), tol);
    z = z * 0.5f + gx;  // reads itself where it writes
    z += gy;
    require_equal(z, eval((relu(x) * 2.f + y - row) * 0.5f + x + y), tol);
    if (scope.gpu) CHECK(scope.gpu->launches == 3);
  }
  SECTION("views over tensors and over expressions") {
    Tensor<float, D3, cuda> t = transpose<2, 1, 0>(gx) + 1.f;
    require_equal(t, eval(transpose<2, 1, 0>(x) + 1.f), tol);
    Tensor<float, D3, cuda> r = reverse<1>(gx * gy) - strided_slice(gy, {0, 0, 0}, {3, 17, 29}, {1, 1, 1});
    require_equal(r, eval(reverse<1>(x * y) - y), tol);
  }
  SECTION("reductions, alone and inside an element-wise expression") {
    Tensor<float, D2, cuda> s = reduce_sum<2>(gx * gy);
    require_equal(s, eval(reduce_sum<2>(x * y)), 1e-5);
    Tensor<float, D1, cuda> m = reduce_mean<0, 2>(gx);
    require_equal(m, eval(reduce_mean<0, 2>(x)), 1e-5);
    Tensor<float, D2, cuda> n = tanh(reduce_max<2>(gx)) * 2.f + reduce_min<2>(gy);
    require_equal(n, eval(tanh(reduce_max<2>(x)) * 2.f + reduce_min<2>(y)), tol);
    CHECK(item(reduce_sum(gx)) == Approx(item(reduce_sum(x))).epsilon(1e-5));
    // The same reduction twice: bitwise the same (a fixed order, on a GPU as here).
    const Tensor<float, D1, cuda> first = reduce_sum<0, 1>(gx * gy), second = reduce_sum<0, 1>(gx * gy);
    const auto f = to<cpu>(first), g = to<cpu>(second);
    CHECK(std::memcmp(f.data(), g.data(), f.size() * sizeof(float)) == 0);
  }
  SECTION("element access, item and printing copy from the device") {
    CHECK(gx(2, 16, 28) == x(2, 16, 28));
    CHECK(gx.at(0, 1, 2) == x(0, 1, 2));
    CHECK_THROWS_AS(gx.at(3, 0, 0), value_error);
    std::ostringstream on_gpu, on_cpu;
    on_gpu << gx;
    on_cpu << x;
    CHECK(on_gpu.str() == on_cpu.str());
    const Tensor<float, Shape<2, 3>, cuda> zeros;
    CHECK(to<cpu>(zeros)(1, 2) == 0.f);
    Tensor<float, Shape<2, 3>, cuda> written;
    written(1, 2) = 5.f;
    written.at(0, 1) = written(1, 2);
    CHECK(float(written(1, 2)) == 5.f);
    CHECK(to<cpu>(written)(0, 1) == 5.f);
    CHECK(to<cpu>(written)(0, 0) == 0.f);
    CHECK_THROWS_AS(written.at(2, 0) = 1.f, value_error);
    Tensor<float, D3, cuda> copy = gx;  // device to device
    CHECK(copy(1, 2, 3) == x(1, 2, 3));
  }
  SECTION("matmul through the device's BLAS: transposes, batches, broadcasting, inside expressions") {
    const auto a = uniform<float, D2>({7, 5}, 5), b = uniform<float, D2>({5, 6}, 6), c = uniform<float, D2>({6, 5}, 7);
    const auto ga = to<cuda>(a), gb = to<cuda>(b), gc = to<cuda>(c);
    Tensor<float, D2, cuda> p = matmul(ga, gb);
    require_equal(p, eval(matmul(a, b)), 1e-5);
    require_equal(eval(matmul(ga, gc, transpose_b)), eval(matmul(a, c, transpose_b)), 1e-5);
    require_equal(eval(matmul(gb, ga, transpose_a, transpose_b)), eval(matmul(b, a, transpose_a, transpose_b)), 1e-5);
    // A transposed view is read as stored; an expression is evaluated first.
    require_equal(eval(matmul(transpose(gc), transpose(gb) * 2.f)), eval(matmul(transpose(c), transpose(b) * 2.f)), 1e-5);
    // Batches: one batched product where the batch is an operand's or broadcasts it whole; one
    // product per batch element where it broadcasts an operand partly.
    const auto xb = uniform<float, D3>({4, 7, 5}, 8);
    const auto gxb = to<cuda>(xb);
    const auto before = scope.gpu ? scope.gpu->matmuls : 0;
    require_equal(eval(relu(matmul(gxb, gb)) + 1.f), eval(relu(matmul(xb, b)) + 1.f), 1e-5);
    if (scope.gpu) CHECK(scope.gpu->matmuls == before + 1);
    using D4 = Shape<dyn, dyn, dyn, dyn>;
    const auto l = uniform<float, D4>({2, 1, 7, 5}, 9), r = uniform<float, D4>({1, 3, 5, 6}, 10);
    require_equal(eval(matmul(to<cuda>(l), to<cuda>(r))), eval(matmul(l, r)), 1e-5);
    if (scope.gpu) CHECK(scope.gpu->matmuls == before + 1 + 6);
    // Its gradient: matmuls with transposes and a sum over the batch.
    auto [gw] = grad(reduce_sum(tanh(matmul(gxb, gb))), gb);
    auto [cw] = grad(reduce_sum(tanh(matmul(xb, b))), b);
    require_equal(eval(gw), eval(cw), 1e-5);
  }
  SECTION("a dense layer's relu(matmul + bias) is one product with cuBLASLt's epilogue") {
    const auto x = uniform<float, D2>({9, 5}, 21), w = uniform<float, D2>({5, 6}, 22);
    const auto bias = uniform<float, D1>({6}, 23);
    const auto row = uniform<float, D2>({1, 6}, 24), column = uniform<float, D2>({9, 1}, 25);
    const auto gx = to<cuda>(x), gw = to<cuda>(w), grow = to<cuda>(row), gcolumn = to<cuda>(column);
    const auto gbias = to<cuda>(bias);
    using ep = gen::epilogue;
    // Each assignment: its value, and (on the emulated GPU) the epilogue of its one product and
    // the kernels that ran besides it.
    auto fused = [&](const auto& on_gpu, const auto& on_cpu, ep expected, std::size_t kernels) {
      const auto launches = scope.gpu ? scope.gpu->launches : 0, products = scope.gpu ? scope.gpu->matmuls : 0;
      const Tensor<float, D2, cuda> y = on_gpu;
      if (scope.gpu) {
        CHECK(scope.gpu->matmuls == products + 1);
        CHECK(scope.gpu->epilogues.back() == expected);
        CHECK(scope.gpu->launches == launches + kernels);
      }
      require_equal(y, eval(on_cpu), 1e-5);
    };
    fused(relu(matmul(gx, gw) + gbias), relu(matmul(x, w) + bias), ep::relu_bias, 0);
    fused(matmul(gx, gw) + gbias, matmul(x, w) + bias, ep::bias, 0);
    fused(grow + matmul(gx, gw), row + matmul(x, w), ep::bias, 0);
    fused(relu(matmul(gx, gw)), relu(matmul(x, w)), ep::relu, 0);
    const Tensor<float, D2> xt = transpose(x), wt = transpose(w);
    fused(relu(matmul(to<cuda>(xt), to<cuda>(wt), transpose_a, transpose_b) + gbias), relu(matmul(xt, wt, transpose_a, transpose_b) + bias),
          ep::relu_bias, 0);
    // A bias that is an expression is evaluated first; one over the rows is added by a kernel
    // (the epilogue's runs over the columns).
    fused(relu(matmul(gx, gw) + gbias * 2.f), relu(matmul(x, w) + bias * 2.f), ep::relu_bias, 1);
    fused(matmul(gx, gw) + gcolumn, matmul(x, w) + column, ep::none, 1);
    // A batch of products shares the bias; a Dense over [batch, steps, features] (its rows
    // reshaped) is the same product.
    const auto xb = uniform<float, D3>({3, 9, 5}, 26);
    const auto gxb = to<cuda>(xb);
    const Tensor<float, D3, cuda> yb = relu(matmul(gxb, gw) + gbias);
    require_equal(yb, eval(relu(matmul(xb, w) + bias)), 1e-5);
    if (scope.gpu) CHECK(scope.gpu->epilogues.back() == ep::relu_bias);
    // A sum over nothing is zeros: the bias and relu of them, by a kernel.
    const Tensor<float, D2, cuda> empty_x(dims_t<2>{9, 0}), empty_w(dims_t<2>{0, 6});
    const Tensor<float, D2, cuda> only_bias = relu(matmul(empty_x, empty_w) + gbias);
    require_equal(only_bias, eval(relu(bias + Tensor<float, D2>(dims_t<2>{9, 6}))), 0);
    // Doubles are products and kernels.
    const auto xd = uniform<double, D2>({9, 5}, 27), wd = uniform<double, D2>({5, 6}, 28);
    const auto bd = uniform<double, D1>({6}, 29);
    const Tensor<double, D2, cuda> yd = relu(matmul(to<cuda>(xd), to<cuda>(wd)) + to<cuda>(bd));
    require_equal(yd, eval(relu(matmul(xd, wd) + bd)), 1e-12);
    if (scope.gpu) CHECK(scope.gpu->epilogues.back() == ep::none);
  }
  SECTION("an integer division by zero is a value_error, as on the CPU") {
    const Tensor<std::int32_t, D1, cuda> p = to<cuda>(eval(cast<std::int32_t>(uniform<float, D1>({40}, 4, 1, 9))));
    const Tensor<std::int32_t, D1, cuda> q(p.dims());
    auto divide = [&] { return Tensor<std::int32_t, D1, cuda>(p / q); };
    CHECK_THROWS_WITH(divide(), "ctflow::divide: integer division by zero");
    const Tensor<std::int32_t, D1, cuda> ok = p / (q + 1);
    CHECK(ok(7) == p(7));
  }
  SECTION("gradients run on the device") {
    auto [g] = grad(reduce_sum(sigmoid(gx) * gy + square(tanh(gx))), gx);
    const Tensor<float, D3, cuda> dg = g;
    auto [c] = grad(reduce_sum(sigmoid(x) * y + square(tanh(x))), x);
    require_equal(dg, eval(c), 1e-5);
  }
  SECTION("an optimizer's update: assign_together, and a variable's assign_sub") {
    Tensor<float, D3, cuda> w = gx, m(gx.dims());
    Tensor<float, D3> w_cpu = x, m_cpu(x.dims());
    for (int step = 0; step < 2; ++step) {
      auto [g] = grad(reduce_sum(square(w - gy)), w);
      assign_together(std::tie(m, w), m * 0.9f + g * 0.1f, w - 0.05f * (m * 0.9f + g * 0.1f));
      auto [gc] = grad(reduce_sum(square(w_cpu - y)), w_cpu);
      assign_together(std::tie(m_cpu, w_cpu), m_cpu * 0.9f + gc * 0.1f, w_cpu - 0.05f * (m_cpu * 0.9f + gc * 0.1f));
    }
    require_equal(w, w_cpu, 1e-5);
    require_equal(m, m_cpu, 1e-5);
    Variable<float, D3, cuda> v(gx);
    auto [gv] = grad(reduce_sum(square(v - gy)), v);
    v.assign_sub(0.1f * gv);
    require_equal(v, eval(x - 0.1f * ((x - y) * 2.f)), 1e-5);
  }
  SECTION("a repeated step takes no memory from the device once warm") {
    Tensor<float, D3, cuda> w = gx;
    auto step = [&] { w = w - 0.1f * (w - gy) + reduce_mean<2>(w, keepdims) * 0.f; };
    step();
    const gen::memory_info warm = gen::device_state::instance().allocator().info();
    const auto launches = scope.gpu ? scope.gpu->launches : 0;
    for (int i = 0; i < 3; ++i) step();
    const gen::memory_info after = gen::device_state::instance().allocator().info();
    CHECK(after.device_allocations == warm.device_allocations);
    CHECK(after.current == warm.current);
    if (scope.gpu) CHECK(scope.gpu->launches == launches + 6);  // the mean, then the update: two kernels a step
  }
}

TEST_CASE("cuda device (a GPU, or one emulated on the host): shape ops that build new tensors, and their gradients, equal the cpu device") {
  gpu_under_test scope;
  const auto x = uniform<float, D3>({3, 5, 4}, 11), y = uniform<float, D3>({3, 2, 4}, 12);
  const auto gx = to<cuda>(x), gy = to<cuda>(y);
  Tensor<std::int32_t, D1> picks({5});
  const std::int32_t chosen[5] = {2, 0, 2, 1, 2};  // repeated: gather's gradient adds them
  std::copy_n(chosen, 5, picks.data());
  const auto gpicks = to<cuda>(picks);
  Tensor<std::int32_t, D2> grid({2, 3});
  const std::int32_t cells[6] = {3, 0, 4, 4, 1, 3};
  std::copy_n(cells, 6, grid.data());
  const auto ggrid = to<cuda>(grid);
  const double tol = 1e-5;

  SECTION("concat, gather, one_hot, pad and tile, inside expressions") {
    require_equal(eval(concat<1>(gx, gy * 2.f, gx)), eval(concat<1>(x, y * 2.f, x)), tol);
    require_equal(eval(concat<-1>(reverse<2>(gx), gx) + 1.f), eval(concat<-1>(reverse<2>(x), x) + 1.f), tol);
    require_equal(eval(gather<0>(gx, gpicks)), eval(gather<0>(x, picks)), 0);
    require_equal(eval(gather<1>(gx, ggrid) * 3.f), eval(gather<1>(x, grid) * 3.f), tol);
    require_equal(eval(gather<2>(reverse<1>(gx), gpicks)), eval(gather<2>(reverse<1>(x), picks)), 0);  // the last axis
    Tensor<std::int32_t, D1> with_strays({4});
    const std::int32_t strays[4] = {1, -1, 4, 7};  // outside [0, 5): rows of off_value
    std::copy_n(strays, 4, with_strays.data());
    require_equal(eval(one_hot<5>(to<cuda>(with_strays), 2.f, -1.f)), eval(one_hot<5>(with_strays, 2.f, -1.f)), 0);
    require_equal(eval(pad(gx, {{{1, 2}, {0, 3}, {2, 0}}}, 1.5f)), eval(pad(x, {{{1, 2}, {0, 3}, {2, 0}}}, 1.5f)), 0);
    require_equal(eval(tile<2, 1, 3>(gx * gx)), eval(tile<2, 1, 3>(x * x)), tol);
  }
  SECTION("an index out of range is a value_error, as on the CPU") {
    Tensor<std::int32_t, D1> bad({2});
    bad(0) = 1;
    bad(1) = 5;
    const auto gbad = to<cuda>(bad);
    auto gathered = [&] { return Tensor<float, D3, cuda>(gather<1>(gx, gbad)); };
    CHECK_THROWS_WITH(gathered(), Catch::Contains("ctflow::gather") && Catch::Contains("out of range"));
    CHECK_THROWS_AS(eval(gather<1>(x, bad)), value_error);
    auto [g] = grad(reduce_sum(gather<1>(gx, gbad)), gx);
    CHECK_THROWS_AS(eval(g), value_error);
  }
  SECTION("gradients: gather's adds repeated indices, tile's sums the copies, pad's and concat's slice") {
    auto [g0] = grad(reduce_sum(square(gather<1>(gx, gpicks))), gx);
    auto [c0] = grad(reduce_sum(square(gather<1>(x, picks))), x);
    require_equal(eval(g0), eval(c0), tol);
    auto [g1] = grad(reduce_sum(sin(gather<2>(gx, gpicks))) + reduce_sum(square(gather<1>(gx, ggrid))), gx);  // the last axis; 2-D indices
    auto [c1] = grad(reduce_sum(sin(gather<2>(x, picks))) + reduce_sum(square(gather<1>(x, grid))), x);
    require_equal(eval(g1), eval(c1), tol);
    auto [g2] = grad(reduce_sum(sin(tile<2, 1, 3>(gx))), gx);
    auto [c2] = grad(reduce_sum(sin(tile<2, 1, 3>(x))), x);
    require_equal(eval(g2), eval(c2), tol);
    auto [g3, g4] = grad(reduce_sum(square(pad(concat<1>(gx, gy), {{{1, 0}, {2, 2}, {0, 1}}}, 3.f))), gx, gy);
    auto [c3, c4] = grad(reduce_sum(square(pad(concat<1>(x, y), {{{1, 0}, {2, 2}, {0, 1}}}, 3.f))), x, y);
    require_equal(eval(g3), eval(c3), tol);
    require_equal(eval(g4), eval(c4), tol);
    nvrtc_compiles(scope);
  }
  SECTION("gradients of views: each element stored where the view read it, or summed over broadcast axes") {
    auto [g0] = grad(reduce_sum(square(slice<Shape<2, 3, 2>>(reverse<1>(gx), {1, 1, 1}))) * reduce_mean(transpose<2, 1, 0>(gx)), gx);
    auto [c0] = grad(reduce_sum(square(slice<Shape<2, 3, 2>>(reverse<1>(x), {1, 1, 1}))) * reduce_mean(transpose<2, 1, 0>(x)), x);
    require_equal(eval(g0), eval(c0), tol);
    const auto column = uniform<float, D2>({3, 1}, 13);
    const auto gcolumn = to<cuda>(column);
    auto [g1] = grad(reduce_sum(sin(broadcast_to<D2>(gcolumn, {3, 5}))), gcolumn);
    auto [c1] = grad(reduce_sum(sin(broadcast_to<D2>(column, {3, 5}))), column);
    require_equal(eval(g1), eval(c1), tol);
    if (scope.gpu) CHECK((scope.gpu->ran_entry("_items") && !scope.gpu->ran_entry("_serial")));
    // A view that reads an element through several indices (frames of 4 of a signal of 6): its
    // adjoint adds them in order, in one thread.
    ops::affine_map<1, 2> frames;
    frames.out_dims = {3, 4};
    frames.coef[0][0] = frames.coef[1][0] = 1;
    const auto signal = uniform<float, D1>({6}, 14);
    const auto gsignal = to<cuda>(signal);
    auto [g2] = grad(reduce_sum(square(ops::make_view<D2>(frames, gsignal))), gsignal);
    auto [c2] = grad(reduce_sum(square(ops::make_view<D2>(frames, signal))), signal);
    require_equal(eval(g2), eval(c2), tol);
    if (scope.gpu) CHECK((scope.gpu->ran_entry("_serial") && scope.gpu->ran_entry("_finish")));
    nvrtc_compiles(scope);
  }
}

TEST_CASE("cuda device (a GPU, or one emulated on the host): argmax, cumsum, reduce_prod's gradient and the sparse softmax cross-entropy equal the cpu device") {
  gpu_under_test scope;
  auto x = uniform<float, D3>({4, 6, 5}, 21);
  x(1, 2, 3) = x(1, 4, 3);  // a tie: the first index wins
  x(2, 0, 1) = std::numeric_limits<float>::quiet_NaN();  // a NaN wins
  const auto gx = to<cuda>(x);
  const double tol = 1e-5;

  SECTION("argmax, argmin and cumsum along each axis") {
    require_equal(eval(argmax<1>(gx)), eval(argmax<1>(x)), 0);
    require_equal(eval(argmin<-1>(gx * 2.f)), eval(argmin<-1>(x * 2.f)), 0);
    require_equal(eval(argmax<0>(transpose<2, 1, 0>(gx))), eval(argmax<0>(transpose<2, 1, 0>(x))), 0);
    const auto finite = uniform<float, D3>({4, 6, 5}, 22);
    const auto gfinite = to<cuda>(finite);
    require_equal(eval(cumsum<1>(gfinite)), eval(cumsum<1>(finite)), tol);
    require_equal(eval(cumsum<-1>(reverse<0>(gfinite), true, true)), eval(cumsum<-1>(reverse<0>(finite), true, true)), tol);
    auto [g] = grad(reduce_sum(square(cumsum<0>(gfinite, false, true))), gfinite);
    auto [c] = grad(reduce_sum(square(cumsum<0>(finite, false, true))), finite);
    require_equal(eval(g), eval(c), tol);
  }
  SECTION("reduce_prod's gradient: the product of the others, over each axis set, kept or not") {
    const auto p = uniform<float, D3>({3, 4, 5}, 23, 0.5, 1.5);
    const auto gp = to<cuda>(p);
    auto [g0] = grad(reduce_sum(reduce_prod<1>(gp)), gp);
    auto [c0] = grad(reduce_sum(reduce_prod<1>(p)), p);
    require_equal(eval(g0), eval(c0), tol);
    auto [g1] = grad(reduce_sum(sin(reduce_prod<0, 2>(gp, keepdims))), gp);
    auto [c1] = grad(reduce_sum(sin(reduce_prod<0, 2>(p, keepdims))), p);
    require_equal(eval(g1), eval(c1), tol);
  }
  SECTION("the sparse softmax cross-entropy, its gradient, value_and_grad's saved softmax, and labels out of range") {
    const auto logits = uniform<float, D2>({7, 10}, 24, -3, 3);
    Tensor<std::int32_t, D1> labels({7});
    const std::int32_t at[7] = {0, 9, 3, 3, 5, 1, 8};
    std::copy_n(at, 7, labels.data());
    const auto glogits = to<cuda>(logits);
    const auto glabels = to<cuda>(labels);
    require_equal(eval(nn::sparse_softmax_cross_entropy_with_logits(glabels, glogits)), eval(nn::sparse_softmax_cross_entropy_with_logits(labels, logits)), tol);
    require_equal(eval(nn::sparse_softmax_cross_entropy_with_logits(glabels, transpose(transpose(glogits)) * 2.f)),
                  eval(nn::sparse_softmax_cross_entropy_with_logits(labels, logits * 2.f)), tol);
    auto [g] = grad(reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(glabels, glogits)), glogits);
    auto [c] = grad(reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits)), logits);
    require_equal(eval(g), eval(c), tol);
    const auto [gv, gg] = value_and_grad(reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(glabels, glogits)), glogits);
    const auto [cv, cg] = value_and_grad(reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, logits)), logits);
    CHECK(gv == Approx(cv).epsilon(1e-6));
    require_equal(eval(gg), eval(cg), tol);
    labels(4) = 10;
    const auto gbad = to<cuda>(labels);
    auto loss = [&] { return eval(nn::sparse_softmax_cross_entropy_with_logits(gbad, glogits)); };
    CHECK_THROWS_WITH(loss(), Catch::Contains("sparse_softmax_cross_entropy_with_logits") && Catch::Contains("outside the valid range"));
    CHECK_THROWS_AS(eval(nn::sparse_softmax_cross_entropy_with_logits(labels, logits)), value_error);
    nvrtc_compiles(scope);
  }
}

TEST_CASE("cuda device (a GPU, or one emulated on the host): fills and random tensors, views of device memory, and gradients of one variable among several") {
  gpu_under_test scope;
  SECTION("fill, ones, range and the random tensors give the cpu device's values") {
    require_equal(ones<float, Shape<2, 3>, cuda>(), ones<float, Shape<2, 3>>(), 0);
    require_equal(fill<std::int32_t, D2, cuda>(7, {3, 4}), fill<std::int32_t, D2>(7, {3, 4}), 0);
    require_equal(range<float, cuda>(1.f, 4.f, 0.5f), range<float>(1.f, 4.f, 0.5f), 0);
    require_equal(random_uniform<float, D2, cuda>(5, -1, 1, {4, 9}), random_uniform<float, D2>(5, -1, 1, {4, 9}), 0);
    require_equal(random_normal<double, D1, cuda>(6, 0, 2, {33}), random_normal<double, D1>(6, 0, 2, {33}), 0);
    require_equal(truncated_normal<float, D1, cuda>(7, 1, 3, {65}), truncated_normal<float, D1>(7, 1, 3, {65}), 0);
  }
  SECTION("a view of device memory: its elements copied out and in, a strided view assigned") {
    const auto x = uniform<float, D2>({4, 6}, 31);
    Tensor<float, D2, cuda> g = to<cuda>(x);
    Tensor<float, D2> c = x;
    const TensorView<const float, D2, cuda> all(g);
    CHECK(all(3, 5) == x(3, 5));
    // Every other column of rows 1..3, backwards: negative and positive strides.
    TensorView<float, D2, cuda> part(g.data() + 3 * 6 + 4, {3, 3}, {-6, -2});
    TensorView<float, D2> same(c.data() + 3 * 6 + 4, {3, 3}, {-6, -2});
    part = part * 2.f + 1.f;
    same = same * 2.f + 1.f;
    require_equal(g, c, 1e-6);
    part(0, 1) = 9.f;
    CHECK(float(part(0, 1)) == 9.f);
    CHECK(to<cpu>(g)(3, 2) == 9.f);
  }
  SECTION("the gradient of one variable among several of its type: the others' gates read zeros in device memory") {
    const auto a = uniform<float, D2>({3, 4}, 32), b = uniform<float, D2>({5, 2}, 33);
    const auto ga = to<cuda>(a), gb = to<cuda>(b);
    auto [g] = grad(reduce_sum(square(ga)) + reduce_sum(sin(gb)), ga);
    auto [c] = grad(reduce_sum(square(a)) + reduce_sum(sin(b)), a);
    require_equal(eval(g), eval(c), 1e-6);
    if (scope.gpu) {
      gen::temporaries keep;
      const auto closed = gen::device_view(autodiff::detail::gate_view(gb, false, ga.dims()), keep);
      CHECK(scope.gpu->owns(closed.data));
      CHECK(closed.dims == ga.dims());
      CHECK(to<cpu>(TensorView<const float, D2, cuda>(closed.data, closed.dims, closed.strides))(2, 3) == 0.f);
    }
  }
}

TEST_CASE("cuda device: tf.config lists the GPUs, chooses one, sets memory growth and a limit before the first use, and reports memory") {
  const auto gpus = config::list_physical_devices<cuda>();
  CHECK(gpus.size() == gen::devices().size());
  CHECK(config::list_physical_devices<cpu>() == std::vector<config::physical_device>{{"/physical_device:CPU:0", "CPU"}});
  CHECK(config::get_visible_devices<cuda>() == gpus);
  CHECK_THROWS_WITH(config::set_visible_devices<cuda>({{"/physical_device:GPU:99", "GPU"}}), Catch::Contains("is not one of the"));
  CHECK_THROWS_AS(config::experimental::set_memory_growth<cuda>({"/physical_device:CPU:0", "CPU"}, true), value_error);
  if (gpus.empty()) {
    config::set_visible_devices<cuda>({});  // every GPU the driver shows: none here
    CHECK_THROWS_AS((Tensor<float, Shape<2>, cuda>()), device_error);
  } else {
    const auto details = config::experimental::get_device_details<cuda>(gpus.front());
    CHECK(!details.device_name.empty());
    CHECK(details.compute_capability.first >= 5);
    CHECK(config::experimental::get_memory_growth<cuda>(gpus.front()));
    CHECK_THROWS_WITH(config::set_logical_device_configuration<cuda>(gpus.front(), {{64}, {64}}), Catch::Contains("one device per GPU"));
  }
  // On the device (the GPU, or one emulated): the allocator's figures; settings are refused once
  // it is in use.
  gpu_under_test scope;
  {
    const Tensor<float, D1, cuda> t({1000});
    const auto held = config::experimental::get_memory_info<cuda>();
    CHECK(held.current >= 4000);
    CHECK(held.peak >= held.current);
    { const Tensor<float, D1, cuda> big({1 << 20}); }
    CHECK(config::experimental::get_memory_info<cuda>().peak >= held.current + (4u << 20));
    config::experimental::reset_memory_stats<cuda>();
    CHECK(config::experimental::get_memory_info<cuda>().peak == config::experimental::get_memory_info<cuda>().current);
    CHECK_THROWS_WITH(config::set_visible_devices<cuda>(gpus), Catch::Contains("in use already"));
  }
}

TEST_CASE("cuda device (a GPU, or one emulated on the host): check_numerics, alone and on every op, reads the device's values") {
  gpu_under_test scope;
  Tensor<float, D1> x({5});
  x(3) = -1.f;
  const auto g = to<cuda>(x);
  CHECK(to<cpu>(debugging::check_numerics(g * 2.f, "doubled"))(3) == -2.f);
  CHECK_THROWS_AS(debugging::check_numerics(log(g), "logs"), numerics_error);
  CHECK_THROWS_WITH(debugging::check_numerics(sqrt(g), "roots"), Catch::Contains("roots") && Catch::Contains("at index [3]"));
  debugging::enable_check_numerics();
  struct off {
    ~off() { debugging::disable_check_numerics(); }
  } later;
  auto assign = [&] { return Tensor<float, D1, cuda>(g / 0.f); };
  CHECK_THROWS_AS(assign(), numerics_error);
  const Tensor<float, D1, cuda> fine = g + 1.f;
  CHECK(fine(3) == 0.f);
}

TEST_CASE("cuda device (a GPU, or one emulated on the host): jvp's forward-mode derivative equals the cpu device's") {
  gpu_under_test scope;
  const auto x = uniform<float, D2>({4, 7}, 41), t = uniform<float, D2>({4, 7}, 42);
  const auto gx = to<cuda>(x), gt = to<cuda>(t);
  const Tensor<float, D2, cuda> on_gpu = jvp(sin(gx) * gx + reduce_sum<1>(square(gx), keepdims), dual(gx, gt));
  require_equal(on_gpu, eval(jvp(sin(x) * x + reduce_sum<1>(square(x), keepdims), dual(x, t))), 1e-5);
}
