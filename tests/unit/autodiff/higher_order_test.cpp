// Gradients of gradients (Hessian-vector products) and forward mode (jvp).
#include "gradcheck.hpp"

#include <ctflow/autodiff/recording.hpp>

using namespace ctflow;

using gradcheck::uniform;

TEST_CASE("gradients of gradients: Hessian-vector products") {
  auto x = uniform<Shape<5>>(27);
  const auto v = uniform<Shape<5>>(28);
  // f = sum(sin(x) * x^2): H v = (2 sin x + 4 x cos x - x^2 sin x) * v (diagonal Hessian).
  auto f = reduce_sum(sin(x) * square(x));
  auto [g] = grad(f, x);
  auto [hv] = grad(reduce_sum(g * v), x);
  const Tensor<double, Shape<5>> got = hv;
  for (std::size_t i = 0; i < 5; ++i) {
    const double t = x(i);
    REQUIRE(got(i) == Approx((2 * std::sin(t) + 4 * t * std::cos(t) - t * t * std::sin(t)) * v(i)).epsilon(1e-10));
  }
  // A matmul composition: f = sum(tanh(A w)); H v checked against differences of the gradient.
  auto a = uniform<Shape<4, 5>>(29);
  auto w = uniform<Shape<5, 1>>(30);
  const auto u = uniform<Shape<5, 1>>(31);
  auto fw = reduce_sum(tanh(matmul(a, w)));
  auto [gw] = grad(fw, w);
  gradcheck::check(reduce_sum(gw * u), w);
  auto [l, hvu] = value_and_grad(reduce_sum(gw * u), w);
  (void)l;
  const double h = 1e-6;
  for (std::size_t i = 0; i < 5; ++i) {
    Tensor<double, Shape<5, 1>> wp = w + h * u, wm = w - h * u;
    auto [gp] = grad(reduce_sum(tanh(matmul(a, wp))), wp);
    auto [gm] = grad(reduce_sum(tanh(matmul(a, wm))), wm);
    const Tensor<double, Shape<5, 1>> diff = (gp - gm) / (2 * h);
    REQUIRE(hvu(i, 0) == Approx(diff(i, 0)).epsilon(1e-6));
  }
}

TEST_CASE("jvp: the derivative along tangents matches finite differences") {
  auto x = uniform<Shape<3, 4>>(40);
  auto w = uniform<Shape<4, 2>>(41);
  const auto tx = uniform<Shape<3, 4>>(42);
  const auto tw = uniform<Shape<4, 2>>(43);
  auto y = sin(matmul(square(x), w)) + reduce_mean(x);
  const Tensor<double, Shape<3, 2>> got = jvp(y, dual(x, tx), dual(w, tw));
  const double h = 1e-6;
  Tensor<double, Shape<3, 4>> x0 = x;
  Tensor<double, Shape<4, 2>> w0 = w;
  x = x0 + h * tx;
  w = w0 + h * tw;
  const Tensor<double, Shape<3, 2>> up = y;
  x = x0 - h * tx;
  w = w0 - h * tw;
  const Tensor<double, Shape<3, 2>> down = y;
  x = x0;
  w = w0;
  for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got.data()[i] == Approx((up.data()[i] - down.data()[i]) / (2 * h)).epsilon(1e-6));
}

TEST_CASE("recording: an expression of any shape evaluated once, then vector-Jacobian products for chosen leaves") {
  auto x = uniform<Shape<4, 3>>(31);
  Variable<double, Shape<3, 5>> w(uniform<Shape<3, 5>>(32), "w");
  Variable<double, Shape<5>> b(uniform<Shape<5>>(33), "b");
  const TensorView<const double, Shape<4, 3>> xv(x.data(), x.dims());
  auto e = tanh(matmul(xv, w) + b);
  Tensor<double, Shape<4, 5>> out;
  autodiff::recording<decltype(e), TensorView<const double, Shape<4, 3>>, Variable<double, Shape<3, 5>>, Variable<double, Shape<5>>> r(e, out.data());
  const auto expected = eval(tanh(matmul(x, w) + b));
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out.data()[i] == Approx(expected.data()[i]).epsilon(1e-14));
  // <g, e>'s gradients are those of reduce_sum(e * g), for every leaf or some of them.
  const auto g = uniform<Shape<4, 5>>(34);
  const auto [dx, dw, db] = r.gradient(g, &xv, &w, &b);
  const auto [value, ex, ew, eb] = value_and_grad(reduce_sum(tanh(matmul(x, w) + b) * g), x, w, b);
  REQUIRE((dx && dw && db));
  for (std::size_t i = 0; i < ex.size(); ++i) CHECK(dx->data()[i] == Approx(ex.data()[i]).epsilon(1e-12));
  for (std::size_t i = 0; i < ew.size(); ++i) CHECK(dw->data()[i] == Approx(ew.data()[i]).epsilon(1e-12));
  for (std::size_t i = 0; i < eb.size(); ++i) CHECK(db->data()[i] == Approx(eb.data()[i]).epsilon(1e-12));
  const auto [nx, only_w, nb] = r.gradient(g, nullptr, &w, nullptr);
  CHECK((!nx && only_w && !nb));
  for (std::size_t i = 0; i < ew.size(); ++i) CHECK(only_w->data()[i] == Approx(ew.data()[i]).epsilon(1e-12));
}

TEST_CASE("recording: activation(boundary + bias) keeps only its output, and its gradients are value_and_grad's") {
  auto x = uniform<Shape<4, 3>>(51);
  Variable<double, Shape<3, 5>> w(uniform<Shape<3, 5>>(52), "w");
  Variable<double, Shape<5>> b(uniform<Shape<5>>(53), "b");
  const TensorView<const double, Shape<4, 3>> xv(x.data(), x.dims());
  const auto g = uniform<Shape<4, 5>>(54);
  using R = autodiff::recording<decltype(relu(matmul(xv, w) + b)), TensorView<const double, Shape<4, 3>>, Variable<double, Shape<3, 5>>, Variable<double, Shape<5>>>;
  auto check = [&](const auto& e, const auto& reference, Variable<double, Shape<5>>& b) {
    STATIC_REQUIRE(autodiff::activated_sum<std::remove_cvref_t<decltype(e)>>::value);
    Tensor<double, Shape<4, 5>> out;
    autodiff::recording<std::remove_cvref_t<decltype(e)>, TensorView<const double, Shape<4, 3>>, Variable<double, Shape<3, 5>>, Variable<double, Shape<5>>> r(e, out.data());
    const Tensor<double, Shape<4, 5>> expected = reference;
    for (std::size_t i = 0; i < out.size(); ++i) CHECK(out.data()[i] == Approx(expected.data()[i]).epsilon(1e-14));
    const auto [dx, dw, db] = r.gradient(g, &xv, &w, &b);
    const auto [value, ex, ew, eb] = value_and_grad(reduce_sum(reference * g), x, w, b);
    REQUIRE((dx && dw && db));
    for (std::size_t i = 0; i < ex.size(); ++i) CHECK(dx->data()[i] == Approx(ex.data()[i]).epsilon(1e-12));
    for (std::size_t i = 0; i < ew.size(); ++i) CHECK(dw->data()[i] == Approx(ew.data()[i]).epsilon(1e-12));
    for (std::size_t i = 0; i < eb.size(); ++i) CHECK(db->data()[i] == Approx(eb.data()[i]).epsilon(1e-12));
  };
  // relu and elu read their operand's sign, which their value has too; tanh and sigmoid read only
  // their value. The values lie in [-1, 1]: about half of the pre-activations are negative.
  Variable<double, Shape<5>> shift(uniform<Shape<5>>(55), "shift");
  check(relu(matmul(xv, w) + b), relu(matmul(x, w) + b), b);
  check(relu(matmul(xv, w) - shift), relu(matmul(x, w) - shift), shift);
  check(elu(shift + matmul(xv, w)), elu(shift + matmul(x, w)), shift);
  check(tanh(matmul(xv, w) + b), tanh(matmul(x, w) + b), b);
  check(sigmoid(b + matmul(xv, w)), sigmoid(b + matmul(x, w)), b);
  STATIC_REQUIRE(!autodiff::activated_sum<decltype(softplus(matmul(xv, w) + b))>::value);  // reads its operand
  STATIC_REQUIRE(!autodiff::activated_sum<decltype(relu(matmul(xv, w) * b))>::value);      // a product reads both
  // Memory: recording it takes what evaluating it takes, and keeps none of it: the product is not
  // kept beside the output, so evaluating the expression again while the recording lives finds
  // its working memory in the cache.
  auto& cache = ctflow::detail::block_cache::instance();
  const std::size_t limit = cache.limit();
  auto blocks = [&](auto&& f) {
    cache.set_limit(0);
    cache.set_limit(limit);
    const std::size_t before = cache.system_allocations();
    f();
    return cache.system_allocations() - before;
  };
  Tensor<double, Shape<4, 5>> out, again;
  const std::size_t evaluation = blocks([&] { out = relu(matmul(xv, w) + b); });
  CHECK(blocks([&] {
          R r(relu(matmul(xv, w) + b), out.data());
          again = relu(matmul(xv, w) + b);
        }) == evaluation);
}

TEST_CASE("recording: an adjoint its owner gives up holds the first adjoint kept, on a path that does not branch") {
  auto x = uniform<Shape<4, 3>>(41);
  Variable<double, Shape<3, 5>> w(uniform<Shape<3, 5>>(42), "w"), w2(uniform<Shape<3, 5>>(43), "w2");
  Variable<double, Shape<5>> b(uniform<Shape<5>>(44), "b");
  const TensorView<const double, Shape<4, 3>> xv(x.data(), x.dims());
  const auto g = uniform<Shape<4, 5>>(45);
  using X = TensorView<const double, Shape<4, 3>>;
  using W = Variable<double, Shape<3, 5>>;
  using B = Variable<double, Shape<5>>;
  auto same = [](const auto& got, const auto& want) {
    REQUIRE((got && want));
    for (std::size_t i = 0; i < want->size(); ++i) CHECK(got->data()[i] == want->data()[i]);
  };
  {
    // tanh's adjoint g * (1 - y * y) reaches a sum read by two operands: it is kept, in g's memory.
    auto e = tanh(matmul(xv, w) + b);
    Tensor<double, Shape<4, 5>> out;
    autodiff::recording<decltype(e), X, W, B> r(e, out.data());
    const auto [dx, dw, db] = r.gradient(g, &xv, &w, &b);
    Tensor<double, Shape<4, 5>> given = g;
    const auto [gx, gw, gb] = r.gradient(given.data(), TensorView<const double, Shape<4, 5>>(given.data(), given.dims()), &xv, &w, &b);
    same(gx, dx), same(gw, dw), same(gb, db);
    const Tensor<double, Shape<4, 5>> kept = g * (1. - out * out);
    for (std::size_t i = 0; i < kept.size(); ++i) CHECK(given.data()[i] == kept.data()[i]);
  }
  {
    // The walk branches at the root (a product reads both factors): g's memory stays as it was,
    // since the second factor's adjoint still reads g after the first's is kept.
    auto e = tanh(matmul(xv, w) + b) * tanh(matmul(xv, w2) + b);
    Tensor<double, Shape<4, 5>> out;
    autodiff::recording<decltype(e), X, W, W, B> r(e, out.data());
    const auto [dx, dw, dw2, db] = r.gradient(g, &xv, &w, &w2, &b);
    Tensor<double, Shape<4, 5>> given = g;
    const auto [gx, gw, gw2, gb] = r.gradient(given.data(), TensorView<const double, Shape<4, 5>>(given.data(), given.dims()), &xv, &w, &w2, &b);
    same(gx, dx), same(gw, dw), same(gw2, dw2), same(gb, db);
    for (std::size_t i = 0; i < g.size(); ++i) CHECK(given.data()[i] == g.data()[i]);
  }
}
