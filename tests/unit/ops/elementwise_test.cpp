// Element-wise ops: broadcasting, scalars, where, cast, math functions across dtypes.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <cmath>
#include <limits>
#include <vector>

using namespace ctflow;

namespace {
template <class T, class S> Tensor<T, S> iota(T start = T(0), T step = T(1)) {
  Tensor<T, S> t;
  for (std::size_t i = 0; i < t.size(); ++i) t.data()[i] = T(start + T(i) * step);
  return t;
}
}  // namespace

TEST_CASE("broadcasting follows NumPy's rules") {
  auto a = iota<float, Shape<2, 1, 3>>();
  auto b = iota<float, Shape<4, 1>>(10.f, 10.f);
  Tensor<float, Shape<2, 4, 3>> c = a + b;
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      for (std::size_t k = 0; k < 3; ++k) REQUIRE(c(i, j, k) == a(i, 0, k) + b(j, 0));
  // Rank 0 with anything, and size-1 against size-1.
  Tensor<float, Shape<>> s;
  s() = 2.f;
  Tensor<float, Shape<4, 1>> d = b * s;
  REQUIRE(d(3, 0) == 80.f);
  Tensor<float, Shape<1, 1>> one = fill<float, Shape<1, 1>>(3.f) + fill<float, Shape<1>>(1.f);
  REQUIRE(one(0, 0) == 4.f);
}

TEST_CASE("dyn extents broadcast at run time and mismatches throw the static message") {
  Tensor<float, Shape<dyn, 3>> x({4, 3});
  Tensor<float, Shape<dyn, 1>> y({4, 1});
  for (std::size_t i = 0; i < 4; ++i) y(i, 0) = float(i);
  Tensor<float, Shape<dyn, 3>> z = x + y;
  REQUIRE(z(3, 2) == 3.f);
  Tensor<float, Shape<dyn, 3>> w({5, 3});
  REQUIRE_THROWS_WITH((Tensor<float, Shape<dyn, 3>>(x + w)), "ctflow::add: shapes cannot be broadcast: [4,3] x [5,3]");
}

TEST_CASE("a fused expression over large tensors matches the element formula") {
  auto a = random_normal<float, Shape<100003>>(1), b = random_normal<float, Shape<100003>>(2), c = random_normal<float, Shape<100003>>(3);
  Tensor<float, Shape<100003>> r = a + 0.5f * b * sigmoid(c);
  for (std::size_t i = 0; i < r.size(); i += 97)
    REQUIRE(r(i) == Approx(a(i) + 0.5f * b(i) / (1.f + std::exp(-c(i)))).epsilon(1e-5));
  REQUIRE(r(100002) == Approx(a(100002) + 0.5f * b(100002) / (1.f + std::exp(-c(100002)))).epsilon(1e-5));
}

TEST_CASE("destinations larger than the cache, written past it, hold every element on any thread count") {
  // Whole-number values: the sums are exact whichever way the loop computes them. 37 elements
  // past a multiple of 64 leave a tail after the last whole vectors.
  const int threads_before = config::get_num_threads();
  const auto check = [](auto zero) {
    using T = decltype(zero);
    const std::size_t n = backend::cpu::cache_bytes / sizeof(T) + 37;
    Tensor<T, Shape<dyn>> a({n}), b({n});
    for (std::size_t i = 0; i < n; ++i) a(i) = T(i % 1000), b(i) = T(i % 7);
    for (int threads : {1, 2, 3}) {
      config::set_num_threads(threads);
      Tensor<T, Shape<dyn>> r = a + T(3) * b;
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) wrong += r(i) != T(i % 1000) + T(3) * T(i % 7);
      r = r - a;  // in place: each element read before it is overwritten
      for (std::size_t i = 0; i < n; ++i) wrong += r(i) != T(3) * T(i % 7);
      INFO(sizeof(T) << "-byte elements on " << threads << " threads");
      CHECK(wrong == 0);
    }
  };
  check(0.0f);
  check(0.0);
  config::set_num_threads(threads_before);
}

TEST_CASE("broadcast operands follow the rows across every axis and thread split") {
  // 10500 rows of 40: each of two threads starts mid-image (row 5250 is (3, 25, 0)), and rows
  // wrap through each axis; b repeats over the first and third axes, c over the second and last.
  auto a = random_normal<float, Shape<7, 50, 30, 40>>(1);
  auto b = random_normal<float, Shape<50, 1, 40>>(2);
  auto c = random_normal<float, Shape<7, 1, 30, 1>>(3);
  Tensor<float, Shape<7, 50, 30, 40>> r = a + b - c;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 7; ++i)
    for (std::size_t j = 0; j < 50; ++j)
      for (std::size_t k = 0; k < 30; ++k)
        for (std::size_t l = 0; l < 40; ++l) wrong += r(i, j, k, l) != (a(i, j, k, l) + b(j, 0, l)) - c(i, 0, k, 0);
  REQUIRE(wrong == 0);
}

TEST_CASE("short rows, read several at a time where every operand allows it, hold every element on any thread count") {
  // Whole-number values, so that any evaluation order gives the same elements. Rows of 2 to 300
  // elements, counts with and without small divisors (97 has none), and for each row length the
  // count just past two tasks' work, which splits over 2 threads into ranges of unequal length;
  // operands that are contiguous, a bias, a constant, a column, a transpose (the last two never
  // merge), a mask of where, and more biases than the loop tiles.
  const int threads_before = config::get_num_threads();
  const auto check = [](auto zero) {
    using T = decltype(zero);
    for (std::size_t inner : {2, 3, 5, 16, 17, 31, 100, 128, 129, 300})
      for (std::size_t rows : {std::size_t(1), std::size_t(4), std::size_t(97), std::size_t(1000), 2 * backend::cpu::grain_for(inner) + 97}) {
        Tensor<T, Shape<dyn, dyn>> a({rows, inner}), t({inner, rows});
        Tensor<T, Shape<dyn>> b({inner});
        Tensor<T, Shape<dyn, dyn>> col({rows, 1});
        for (std::size_t i = 0; i < rows; ++i) {
          col(i, 0) = T(i % 11);
          for (std::size_t j = 0; j < inner; ++j) a(i, j) = T((i * inner + j) % 13), t(j, i) = T((j + 3 * i) % 7);
        }
        for (std::size_t j = 0; j < inner; ++j) b(j) = T(j % 5);
        for (int threads : {1, 2}) {
          config::set_num_threads(threads);
          Tensor<T, Shape<dyn, dyn>> bias = a * T(2) + b, both = a + b - col, moved = transpose(t) + b;
          Tensor<T, Shape<dyn, dyn>> picked = where(a > b, a, b + T(1));
          // Nine biases: more operands to tile than the loop keeps memory for, so rows one at a time.
          Tensor<T, Shape<dyn, dyn>> many = a + b + b + b + b + b + b + b + b + b;
          std::size_t wrong = 0;
          for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < inner; ++j) {
              wrong += bias(i, j) != T(a(i, j) * T(2) + b(j));
              wrong += both(i, j) != T(a(i, j) + b(j) - col(i, 0));
              wrong += moved(i, j) != T(t(j, i) + b(j));
              wrong += picked(i, j) != (a(i, j) > b(j) ? a(i, j) : T(b(j) + T(1)));
              wrong += many(i, j) != T(a(i, j) + T(9) * b(j));
            }
          INFO(sizeof(T) << "-byte elements, " << rows << " rows of " << inner << " on " << threads << " threads");
          CHECK(wrong == 0);
        }
      }
    // Rank 3: a bias of rank 3 and a constant per image merge; rows wrap through the first axis.
    Tensor<T, Shape<dyn, dyn, dyn>> x({3, 60, 5}), y({1, 1, 5}), z({3, 1, 1});
    for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = T(i % 17);
    for (std::size_t i = 0; i < 5; ++i) y.data()[i] = T(i + 1);
    for (std::size_t i = 0; i < 3; ++i) z.data()[i] = T(10 * i);
    Tensor<T, Shape<dyn, dyn, dyn>> r = x * y + z;
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < 3; ++i)
      for (std::size_t j = 0; j < 60; ++j)
        for (std::size_t k = 0; k < 5; ++k) wrong += r(i, j, k) != T(x(i, j, k) * y(0, 0, k) + z(i, 0, 0));
    CHECK(wrong == 0);
  };
  check(0.0f);
  check(0.0);
  check(std::int32_t(0));
  check(std::uint8_t(0));
  config::set_num_threads(threads_before);
  // How many rows merge: the largest divisor of the row count within the limit, against a search.
  std::size_t wrong = 0;
  for (std::size_t n = 1; n < 400; ++n)
    for (std::size_t m = 1; m < 64; ++m) {
      std::size_t want = std::min(n, m);
      while (n % want != 0) --want;
      wrong += backend::cpu::largest_divisor_within(n, m) != want;
    }
  CHECK(wrong == 0);
}

TEST_CASE("a row's tail is computed in one partial vector, and nothing past the destination is written") {
  // Rows of 10 classes minus a column (softmax's shape), of 5 and of 31 (tails of 10, 5 and 15
  // floats, or 2, 5 and 7 doubles), each element against the scalar function; the destination
  // is a view into memory that goes on past it, whose next elements must keep their values.
  const int threads_before = config::get_num_threads();
  const auto check = [](auto zero) {
    using T = decltype(zero);
    for (std::size_t inner : {5, 10, 31})
      for (int threads : {1, 2}) {
        config::set_num_threads(threads);
        const std::size_t rows = 4099;
        Tensor<T, Shape<dyn, dyn>> x({rows, inner}), col({rows, 1});
        for (std::size_t i = 0; i < rows; ++i) {
          col(i, 0) = T(0.25) * T(i % 9);
          for (std::size_t j = 0; j < inner; ++j) x(i, j) = T(0.125) * T((i * inner + j) % 23) - T(1);
        }
        std::vector<T> memory(rows * inner + 64, T(-7));
        TensorView<T, Shape<dyn, dyn>> y(memory.data(), {rows, inner});
        y = exp(x - col) / (col + T(1));
        std::size_t wrong = 0;
        for (std::size_t i = 0; i < rows; ++i)
          for (std::size_t j = 0; j < inner; ++j) {
            const T want = std::exp(x(i, j) - col(i, 0)) / (col(i, 0) + T(1));
            wrong += std::abs(y(i, j) - want) > T(4) * std::numeric_limits<T>::epsilon() * want;
          }
        std::size_t clobbered = 0;
        for (std::size_t i = rows * inner; i < memory.size(); ++i) clobbered += memory[i] != T(-7);
        INFO(sizeof(T) << "-byte elements, rows of " << inner << " on " << threads << " threads");
        CHECK(wrong == 0);
        CHECK(clobbered == 0);
      }
  };
  check(0.0f);
  check(0.0);
  config::set_num_threads(threads_before);
}

TEST_CASE("numbers adopt the tensor's dtype") {
  auto i = iota<int32_t, Shape<4>>();
  Tensor<int32_t, Shape<4>> j = i * 3 + 1;
  REQUIRE(j(3) == 10);
  Tensor<int32_t, Shape<4>> k = j / 2;  // truncating integer division
  REQUIRE(k(3) == 5);
  REQUIRE_THROWS_AS((Tensor<int32_t, Shape<4>>(j / i)), value_error);  // i(0) == 0
  auto u = iota<uint8_t, Shape<3>>(uint8_t(250), uint8_t(2));
  Tensor<uint8_t, Shape<3>> v = u + 10;  // wraps as uint8 does
  REQUIRE(v(0) == 4);
}

TEST_CASE("comparisons give bool tensors and where selects") {
  auto x = iota<float, Shape<8>>(-4.f);
  Tensor<bool, Shape<8>> pos = x > 0.f;
  REQUIRE(!pos(4));
  REQUIRE(pos(5));
  Tensor<float, Shape<8>> r = where(x > 0.f, x, 0.f);
  REQUIRE(r(0) == 0.f);
  REQUIRE(r(7) == 3.f);
  Tensor<bool, Shape<8>> both = logical_and(x > -2.f, x < 2.f);
  REQUIRE(both(3));
  REQUIRE(!both(1));
  Tensor<bool, Shape<8>> neither = logical_not(logical_or(equal(x, 0.f), not_equal(x, x)));
  REQUIRE(!neither(4));
  REQUIRE(neither(0));
  // where with a vectorised mask over a long tensor
  auto big = random_normal<double, Shape<1000>>(5);
  Tensor<double, Shape<1000>> rl = where(big >= 0.0, big, big * 0.1);
  for (std::size_t i = 0; i < 1000; ++i) REQUIRE(rl(i) == (big(i) >= 0 ? big(i) : big(i) * 0.1));
}

TEST_CASE("cast truncates toward zero, saturates and maps to bool") {
  Tensor<float, Shape<5>> f;
  f(0) = 1.7f; f(1) = -1.7f; f(2) = 1e20f; f(3) = std::nanf(""); f(4) = 0.f;
  Tensor<int32_t, Shape<5>> i = cast<int32_t>(f);
  REQUIRE(i(0) == 1);
  REQUIRE(i(1) == -1);
  REQUIRE(i(2) == 2147483647);
  REQUIRE(i(3) == 0);
  Tensor<bool, Shape<5>> b = cast<bool>(f);
  REQUIRE(b(0));
  REQUIRE(!b(4));
  Tensor<double, Shape<5>> d = cast<double>(i);
  REQUIRE(d(1) == -1.0);
  Tensor<float16, Shape<5>> h = cast<float16>(f);
  REQUIRE(float(h(0)) == Approx(1.7f).epsilon(1e-3));
}

TEST_CASE("a cast to a 16-bit float rounds even where its value is used at once, as TensorFlow's") {
  // tf.cast(tf.cast(x, tf.float16 / tf.bfloat16), tf.float32), TensorFlow 2.21.
  Tensor<float, Shape<6>> x;
  const float values[] = {1.0001f, 3e9f, 65519.f, 65520.f, -2.5e-8f, 1.00390625f + 1e-7f};
  std::copy(values, values + 6, x.begin());
  const float half[] = {1.f, INFINITY, 65504.f, INFINITY, -0.f, 1.00390625f};
  const float brain[] = {1.f, 3003121664.f, 65536.f, 65536.f, -2.5029294192790985e-08f, 1.0078125f};
  const Tensor<float, Shape<6>> h = cast<float>(cast<float16>(x)), b = cast<float>(cast<bfloat16>(x)) * 1.f;
  const Tensor<float, Shape<6>, reference> hr = cast<float>(cast<float16>(to<reference>(x)));
  for (std::size_t i = 0; i < 6; ++i) {
    INFO(i);
    CHECK(h(i) == half[i]);
    CHECK(hr(i) == half[i]);
    CHECK(b(i) == brain[i]);
  }
  CHECK(std::signbit(h(4)));
}

TEST_CASE("math functions match the standard library in float and double") {
  // -2, -1.9, ..., 2, each the double nearest k / 10 (a division rounds once, whether or not the
  // compiler contracts a multiply-add, so floor and ceil see integers exactly).
  Tensor<double, Shape<41>> x;
  for (std::size_t i = 0; i < 41; ++i) x(i) = (double(i) - 20) / 10;
  auto xf = cast<float>(x);
  auto check = [&](auto ctf, auto ref, double lo = -1e300) {
    Tensor<double, Shape<41>> r = ctf(x);
    Tensor<float, Shape<41>> rf = ctf(eval(xf));
    for (std::size_t i = 0; i < 41; ++i) {
      if (x(i) <= lo) continue;
      REQUIRE(r(i) == Approx(ref(x(i))).epsilon(1e-12).margin(1e-12));
      REQUIRE(rf(i) == Approx(ref(x(i))).epsilon(2e-6).margin(2e-6));
    }
  };
  check([](auto&& v) { return exp(v); }, [](double v) { return std::exp(v); });
  check([](auto&& v) { return log(v); }, [](double v) { return std::log(v); }, 0.05);
  check([](auto&& v) { return log1p(v); }, [](double v) { return std::log1p(v); }, -0.95);
  check([](auto&& v) { return expm1(v); }, [](double v) { return std::expm1(v); });
  check([](auto&& v) { return sqrt(v); }, [](double v) { return std::sqrt(v); }, 0.05);
  check([](auto&& v) { return rsqrt(v); }, [](double v) { return 1 / std::sqrt(v); }, 0.05);
  check([](auto&& v) { return sin(v); }, [](double v) { return std::sin(v); });
  check([](auto&& v) { return cos(v); }, [](double v) { return std::cos(v); });
  check([](auto&& v) { return tanh(v); }, [](double v) { return std::tanh(v); });
  check([](auto&& v) { return sigmoid(v); }, [](double v) { return 1 / (1 + std::exp(-v)); });
  check([](auto&& v) { return softplus(v); }, [](double v) { return std::log1p(std::exp(v)); });
  check([](auto&& v) { return softsign(v); }, [](double v) { return v / (1 + std::abs(v)); });
  check([](auto&& v) { return swish(v); }, [](double v) { return v / (1 + std::exp(-v)); });
  check([](auto&& v) { return elu(v); }, [](double v) { return v > 0 ? v : std::expm1(v); });
  check([](auto&& v) { return selu(v); }, [](double v) { return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * std::expm1(v)); });
  check([](auto&& v) { return gelu(v); }, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check([](auto&& v) { return relu(v); }, [](double v) { return v > 0 ? v : 0; });
  check([](auto&& v) { return relu6(v * 4.0); }, [](double v) { return std::min(std::max(4 * v, 0.0), 6.0); });
  check([](auto&& v) { return leaky_relu(v); }, [](double v) { return v > 0 ? v : 0.2 * v; });
  check([](auto&& v) { return abs(v); }, [](double v) { return std::abs(v); });
  check([](auto&& v) { return square(v); }, [](double v) { return v * v; });
  check([](auto&& v) { return floor(v); }, [](double v) { return std::floor(v); });
  check([](auto&& v) { return ceil(v); }, [](double v) { return std::ceil(v); });
  check([](auto&& v) { return pow(v, 3.0); }, [](double v) { return v * v * v; }, 0.0);
  check([](auto&& v) { return maximum(v, 0.5); }, [](double v) { return std::max(v, 0.5); });
  check([](auto&& v) { return minimum(v, 0.5); }, [](double v) { return std::min(v, 0.5); });
  check([](auto&& v) { return clip_by_value(v, -1.0, 1.0); }, [](double v) { return std::clamp(v, -1.0, 1.0); });
  check([](auto&& v) { return -v; }, [](double v) { return -v; });
}

TEST_CASE("float32 exp is within 2 ulp over its whole range and keeps the special values") {
  // 2^20 points from the smallest normal result to the largest finite one, then the edges.
  constexpr std::size_t n = std::size_t(1) << 20;
  Tensor<float, Shape<n>> x;
  for (std::size_t i = 0; i < n; ++i) x(i) = -87.3f + 176.0f * float(i) / float(n);
  Tensor<float, Shape<n>> y = exp(x);
  double worst = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double want = std::exp(double(x(i)));
    if (want > 3.4e38) continue;
    const float w = float(want);
    worst = std::max(worst, std::abs(double(y(i)) - want) / double(std::nextafter(w, INFINITY) - w));
  }
  CHECK(worst <= 2.0);
  Tensor<float, Shape<8>> s;
  const float special[8] = {NAN, INFINITY, -INFINITY, 88.8f, -103.0f, -200.0f, 0.0f, 88.72f};
  std::copy(special, special + 8, s.data());
  Tensor<float, Shape<8>> e = exp(s);
  CHECK(std::isnan(e(0)));
  CHECK(e(1) == INFINITY);
  CHECK(e(2) == 0.0f);
  CHECK(e(3) == INFINITY);
  CHECK(e(4) == 0.0f);  // a denormal result, flushed to zero as TensorFlow's tf.exp(-103.0) is
  CHECK(e(5) == 0.0f);
  CHECK(e(6) == 1.0f);
  CHECK(std::isfinite(e(7)));
}

TEST_CASE("round is half to even and sign keeps zero") {
  Tensor<float, Shape<6>> x;
  x(0) = 0.5f; x(1) = 1.5f; x(2) = 2.5f; x(3) = -0.5f; x(4) = -2.7f; x(5) = 0.f;
  Tensor<float, Shape<6>> r = round(x), s = sign(x);
  REQUIRE(r(0) == 0.f);
  REQUIRE(r(1) == 2.f);
  REQUIRE(r(2) == 2.f);
  REQUIRE(r(3) == 0.f);
  REQUIRE(r(4) == -3.f);
  REQUIRE(s(4) == -1.f);
  REQUIRE(s(5) == 0.f);
  Tensor<int64_t, Shape<3>> p = pow(iota<int64_t, Shape<3>>(2), int64_t(3));
  REQUIRE(p(2) == 64);
  Tensor<int16_t, Shape<3>> ab = abs(iota<int16_t, Shape<3>>(-1));
  REQUIRE(ab(0) == 1);
  Tensor<int8_t, Shape<3>> neg = -iota<int8_t, Shape<3>>(1);
  REQUIRE(neg(2) == -3);
}

TEST_CASE("assign_together writes its destinations as assignments in order would, in one pass where it can") {
  // Adam's update of a variable over 100003 elements (the threads' ranges, 512-element chunks, a
  // tail): the new momentum and velocity are read by the variable's update.
  const std::size_t n = 100003;
  Tensor<float, Shape<dyn>> g({n}), m({n}), v({n}), w({n});
  for (std::size_t i = 0; i < n; ++i) {
    g.data()[i] = std::sin(float(i) * 0.37f);
    m.data()[i] = 0.1f * std::cos(float(i) * 0.11f);
    v.data()[i] = 0.01f + 0.01f * std::sin(float(i) * 0.05f) * std::sin(float(i) * 0.05f);
    w.data()[i] = std::cos(float(i) * 0.23f);
  }
  Tensor<float, Shape<dyn>> m2 = m, v2 = v, w2 = w;
  const float lr = 0.01f;
  m2 = m2 + (g - m2) * 0.1f;
  v2 = v2 + (square(g) - v2) * 0.001f;
  w2 = w2 - m2 * lr / (sqrt(v2) + 1e-7f);
  assign_together(std::tie(m, v, w), m + (g - m) * 0.1f, v + (square(g) - v) * 0.001f, w - m * lr / (sqrt(v) + 1e-7f));
  for (std::size_t i = 0; i < n; ++i) {
    REQUIRE(m.data()[i] == Approx(m2.data()[i]).epsilon(1e-6));
    REQUIRE(v.data()[i] == Approx(v2.data()[i]).epsilon(1e-6));
    REQUIRE(w.data()[i] == Approx(w2.data()[i]).epsilon(1e-6));
  }
  // A later destination read where it is written gives its old value (Lion: the variable first).
  Tensor<float, Shape<dyn>> s = m, x = w;
  const Tensor<float, Shape<dyn>> x_expected = x - 0.5f * s, s_expected = s * 3.0f;
  assign_together(std::tie(x, s), x - 0.5f * s, s * 3.0f);
  for (std::size_t i = 0; i < n; ++i) REQUIRE((x.data()[i] == Approx(x_expected.data()[i]) && s.data()[i] == s_expected.data()[i]));
}

TEST_CASE("assign_together reads a destination elsewhere than it writes as assignments in order read it") {
  auto a = iota<float, Shape<3, 4>>(1.f);
  auto b = iota<float, Shape<3, 4>>(10.f);
  // The sum reads all of a: after a's assignment, as b = b + reduce_sum(a) would after a = a * 2.
  assign_together(std::tie(a, b), a * 2.0f, b + reduce_sum(a));
  for (std::size_t i = 0; i < 12; ++i) {
    REQUIRE(a.data()[i] == 2.0f * float(1 + i));
    REQUIRE(b.data()[i] == float(10 + i) + 156.0f);  // 2 * (1 + ... + 12)
  }
  // A broadcast row of the first destination: the second reads its new values.
  const TensorView<const float, Shape<4>> row(a.data());
  assign_together(std::tie(a, b), a + 1.0f, b - row);
  for (std::size_t i = 0; i < 12; ++i) REQUIRE(b.data()[i] == float(10 + i) + 156.0f - (2.0f * float(1 + i % 4) + 1.0f));
  // A strided destination (every other column) and the reference device: in order too.
  Tensor<float, Shape<3, 4>> c;
  TensorView<float, Shape<3, 2>> odd(c.data() + 1, {3, 2}, {4, 2});
  Tensor<float, Shape<3, 2>> d = fill<float, Shape<3, 2>>(5.0f);
  assign_together(std::tie(odd, d), fill<float, Shape<3, 2>>(1.0f), d + odd);
  for (std::size_t i = 0; i < 6; ++i) REQUIRE((d.data()[i] == 6.0f && c.data()[2 * i + 1] == 1.0f && c.data()[2 * i] == 0.0f));
  // A view of the destination's own type is written into it, not bound to it.
  const TensorView<float, Shape<3, 2>> source(d.data(), {3, 2});
  assign_together(std::tie(odd, d), source, d * 2.0f);
  CHECK(odd.data() == c.data() + 1);
  for (std::size_t i = 0; i < 6; ++i) REQUIRE((c.data()[2 * i + 1] == 6.0f && d.data()[i] == 12.0f));
  Tensor<double, Shape<dyn>, reference> p({5}), q({5});
  for (std::size_t i = 0; i < 5; ++i) p.data()[i] = double(i);
  assign_together(std::tie(p, q), p + 1.0, p * 2.0);
  for (std::size_t i = 0; i < 5; ++i) REQUIRE((p.data()[i] == double(i + 1) && q.data()[i] == 2.0 * double(i + 1)));
}

TEST_CASE("assign_together writes destinations that share memory as assignments in order would") {
  // Two views of one buffer, one element apart: the second assignment wins where they meet.
  Tensor<float, Shape<dyn>> buffer({2049});
  TensorView<float, Shape<dyn>> first(buffer.data(), {2048}), second(buffer.data() + 1, {2048});
  assign_together(std::tie(first, second), fill<float, Shape<dyn>>(1.0f, {2048}), fill<float, Shape<dyn>>(2.0f, {2048}));
  REQUIRE(buffer.data()[0] == 1.0f);
  for (std::size_t i = 1; i < 2049; ++i) REQUIRE(buffer.data()[i] == 2.0f);
  // The same tensor twice: the second expression reads the first's values.
  Tensor<float, Shape<dyn>> t = fill<float, Shape<dyn>>(3.0f, {1000});
  assign_together(std::tie(t, t), t * 2.0f, t + 1.0f);
  for (std::size_t i = 0; i < 1000; ++i) REQUIRE(t.data()[i] == 7.0f);
}

TEST_CASE("evaluation runs in TensorFlow's floating-point environment: denormals read and written as zero, the caller's left as it was") {
  // TensorFlow 2.21 on this CPU: tf.exp([-103., -80.]) = [0, 1.8048513e-35]; x = [1e-40, 3e-39]:
  // x * 1 = x + 0 = sqrt(x) = [0, 0], tf.reduce_sum(x) = 0; tf.exp(-720.0) in float64 = 0.
  Tensor<float, Shape<2>> x, e;
  x(0) = 1e-40f;
  x(1) = 3e-39f;
  REQUIRE(std::fpclassify(x(0)) == FP_SUBNORMAL);
  volatile float half = 0.5f;
  const bool caller_flushes = float(x(0) * half) == 0.0f;  // the test's own thread, before and after
  Tensor<float, Shape<2>> y = x * 1.0f;
  CHECK((y(0) == 0.0f && y(1) == 0.0f));
  y = sqrt(x);
  CHECK((y(0) == 0.0f && y(1) == 0.0f));
  CHECK(reduce_sum(x).item() == 0.0f);
  e(0) = -103.0f;
  e(1) = -80.0f;
  y = exp(e);
  CHECK(y(0) == 0.0f);
  CHECK(y(1) == Approx(1.8048513e-35f));
  Tensor<double, Shape<1>> d;
  d(0) = -720.0;
  CHECK(Tensor<double, Shape<1>>(exp(d))(0) == 0.0);
  // The same on the reference device, and on two threads over a large tensor.
  Tensor<float, Shape<2>, reference> r = to<reference>(x);
  Tensor<float, Shape<2>, reference> ry = r * 1.0f;
  CHECK((ry.data()[0] == 0.0f && ry.data()[1] == 0.0f));
  config::set_num_threads(2);
  Tensor<float, Shape<dyn>> big = fill<float, Shape<dyn>>(1e-40f, {1 << 20});
  Tensor<float, Shape<dyn>> twice = big * 2.0f;
  CHECK(reduce_max(twice).item() == 0.0f);
  // The calling thread's own arithmetic is untouched.
  CHECK((float(x(0) * half) == 0.0f) == caller_flushes);
  CHECK(!caller_flushes);
}
