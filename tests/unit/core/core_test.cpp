// Tensors, shapes, dtypes, views, variables, printing, fills and random values.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace ctflow;

TEST_CASE("static tensors are zero-filled, aligned and row-major") {
  Tensor<float, Shape<2, 3>> t;
  REQUIRE(t.size() == 6);
  REQUIRE(t.dims() == dims_t<2>{2, 3});
  REQUIRE(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
  for (float v : t) REQUIRE(v == 0.f);
  t(1, 2) = 5.f;
  REQUIRE(t.data()[5] == 5.f);
  REQUIRE(t.strides() == std::array<std::ptrdiff_t, 2>{3, 1});
}

// A tensor of n floats on D whose memory the program reads (a volatile store of its address): an
// allocation that nothing reads may be left out, and its failure with it (clang -O1 leaves out
// the reference device's aligned_alloc, memset and free).
template <class D> void allocate_read(std::size_t n) {
  [[maybe_unused]] static const float* volatile read;  // GCC counts a volatile store as no use
  read = Tensor<float, Shape<dyn>, D>({n}).data();
}

TEST_CASE("memory the system does not give is std::bad_alloc, on every host device") {
  const std::size_t exbibyte = std::size_t(1) << 58;  // floats: 2^60 bytes
  CHECK_THROWS_AS(allocate_read<cpu>(exbibyte), std::bad_alloc);
  CHECK_THROWS_AS(allocate_read<reference>(exbibyte), std::bad_alloc);
  Tensor<float, Shape<dyn>> small({3});  // and the next allocation is served
  CHECK(small.size() == 3);
}

TEST_CASE("dyn extents are given at construction and checked against static ones") {
  Tensor<float, Shape<dyn, 3>> x({5, 3});
  REQUIRE(x.dims() == dims_t<2>{5, 3});
  REQUIRE_THROWS_AS((Tensor<float, Shape<dyn, 3>>({5, 4})), shape_error);
  REQUIRE_THROWS_WITH((Tensor<float, Shape<dyn, 3>>({5, 4})), "ctflow::Tensor: shapes differ: [None,3] x [5,4]");
}

template <class T> concept has_item = requires(const T& t) { t.item(); };

TEST_CASE("a rank-0 tensor or expression gives its number: float(t), t.item(), or an initialisation") {
  Tensor<float, Shape<2, 3>> x;
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = float(i);
  const float mean = reduce_mean(x);  // an expression of rank 0, evaluated here
  REQUIRE(mean == 2.5f);
  REQUIRE(float(reduce_max(x)) == 5.f);
  REQUIRE(reduce_sum(x * x).item() == 55.f);
  const Tensor<float, Shape<>> s = reduce_sum(x);
  REQUIRE(s.item() == 15.f);
  REQUIRE(static_cast<double>(s) == 15.0);
  const double acc = reduce_mean(cast<double>(equal(x, reverse<1>(x))));  // elements 1 and 4
  REQUIRE(acc == 2.0 / 6.0);
  Tensor<std::int32_t, Shape<dyn>> v({4});
  v(2) = 7;
  REQUIRE(reduce_max(v).item() == 7);
  REQUIRE(TensorView<const std::int32_t, Shape<>>(v.data() + 2).item() == 7);
  Variable<float, Shape<>> w(Tensor<float, Shape<>>(s * 2.f), "w");
  REQUIRE(float(w) == 30.f);
  REQUIRE(to<reference>(s * 3.f).item() == 45.f);
  REQUIRE(reduce_sum(to<reference>(x)).item() == 15.f);
  REQUIRE(squeeze<0>(reshape<Shape<1>>(s)).item() == 15.f);  // a view of rank 0
  static_assert(!std::is_convertible_v<Tensor<float, Shape<2, 3>>, float>, "only rank 0 converts");
  static_assert(has_item<Tensor<float, Shape<>>> && !has_item<Tensor<float, Shape<3>>>, "only rank 0 has item()");
  // A rank-0 tensor still broadcasts lazily in expressions: it is not read as a number there.
  auto e = x * s;
  static_assert(!Number<Tensor<float, Shape<>>>);
  REQUIRE(Tensor<float, Shape<2, 3>>(e)(1, 2) == 75.f);
}

TEST_CASE("at() checks indices") {
  Tensor<int32_t, Shape<2, 2>> t;
  t.at(1, 1) = 7;
  REQUIRE(t(1, 1) == 7);
  REQUIRE_THROWS_AS(t.at(2, 0), value_error);
  REQUIRE_THROWS_AS(t.at(0, -1), value_error);
}

TEST_CASE("a dyn tensor takes the extents of what is assigned") {
  Tensor<float, Shape<dyn>> x;
  REQUIRE(x.size() == 0);
  Tensor<float, Shape<4>> a = fill<float, Shape<4>>(2.f);
  x = a * 3.f;
  REQUIRE(x.size() == 4);
  REQUIRE(x(3) == 6.f);
}

TEST_CASE("a tensor about to be dropped reshapes into its own memory: std::move(t).reshaped<S>(dims)") {
  Tensor<float, Shape<dyn, 2, 3>> t({4, 2, 3});
  for (std::size_t k = 0; k < 24; ++k) t.data()[k] = float(k);
  const float* memory = t.data();
  auto r = std::move(t).reshaped<Shape<dyn, 6>>({4, 6});
  REQUIRE(r.data() == memory);
  REQUIRE(r.dims() == dims_t<2>{4, 6});
  for (std::size_t k = 0; k < 24; ++k) REQUIRE(r.data()[k] == float(k));
  Tensor<float, Shape<dyn, 6>> u({2, 6});
  CHECK_THROWS_AS((std::move(u).reshaped<Shape<dyn, 5>>({3, 5})), shape_error);  // 12 elements, not 15
  Tensor<float, Shape<dyn, 6>> v({2, 6});
  CHECK_THROWS_AS((std::move(v).reshaped<Shape<dyn, 4>>({2, 6})), shape_error);  // 12 elements, but not [?, 4]
}

TEST_CASE("bfloat16 and float16 round to nearest even and compute in float") {
  REQUIRE(float(bfloat16(1.0f)) == 1.0f);
  REQUIRE(bfloat16(1.00390625f).bits == 0x3f80);  // halfway, rounds to even
  REQUIRE(bfloat16(1.01171875f).bits == 0x3f82);
  REQUIRE(float(float16(65504.f)) == 65504.f);
  REQUIRE(float16(1e6f).bits == 0x7c00);           // overflow to inf
  REQUIRE(float(float16(5.9604645e-8f)) == 5.9604645e-8f);  // smallest subnormal
  REQUIRE(float16(0.1f).bits == 0x2e66);
  Tensor<bfloat16, Shape<3>> b;
  b(0) = 1.5f; b(1) = -2.f; b(2) = 3.f;
  Tensor<bfloat16, Shape<3>> c = b * b + 1.f;
  REQUIRE(float(c(0)) == 3.25f);
  REQUIRE(float(c(1)) == 5.f);
  REQUIRE(float(c(2)) == 10.f);
  REQUIRE(std::string(dtype_name<float16>()) == "float16");
}

TEST_CASE("views read and write user memory without copying") {
  float mem[6] = {1, 2, 3, 4, 5, 6};
  TensorView<float, Shape<dyn, 3>> v(mem, {2, 3});
  v = v * 2.f;
  REQUIRE(mem[5] == 12.f);
  TensorView<const float, Shape<2, 3>> cv(mem);
  Tensor<float, Shape<3, 2>> t = transpose(cv);
  REQUIRE(t(2, 1) == 12.f);
  // A view of a whole tensor writes through to it.
  TensorView<float, Shape<dyn, 2>> tv(t);
  tv = tv + 1.f;
  REQUIRE(t(2, 1) == 13.f);
  const Tensor<float, Shape<3, 2>>& ct = t;
  TensorView<const float, Shape<3, 2>> ctv(ct);
  REQUIRE(ctv(0, 0) == t(0, 0));
  // A strided view (every second element) is written in place.
  float wide[6] = {0, 0, 0, 0, 0, 0};
  TensorView<float, Shape<3>> every_other(wide, {3}, {2});
  every_other = fill<float, Shape<3>>(1.f);
  REQUIRE(wide[0] == 1.f);
  REQUIRE(wide[1] == 0.f);
  REQUIRE(wide[4] == 1.f);
}

TEST_CASE("assigning an expression that reads the destination through a view is safe") {
  Tensor<float, Shape<2, 2>> a;
  a(0, 1) = 1.f;
  a(1, 0) = 2.f;
  a = transpose(a);
  REQUIRE(a(0, 1) == 2.f);
  REQUIRE(a(1, 0) == 1.f);
  a = matmul(a, a);
  REQUIRE(a(0, 0) == 2.f);
}

TEST_CASE("a boundary read element-wise at the root is computed in the destination, unless the expression reads it") {
  const auto a = random_normal<float, Shape<6, 5>>(1, 0.0, 1.0);
  const auto b = random_normal<float, Shape<5, 7>>(2, 0.0, 1.0);
  const auto b2 = random_normal<float, Shape<7, 7>>(3, 0.0, 1.0);
  const Tensor<float, Shape<7>> c = random_normal<float, Shape<7>>(4, 0.0, 1.0);
  const Tensor<float, Shape<6, 7>> p = matmul(a, b);
  const Tensor<float, Shape<6, 7>> pp = matmul(p, b2);
  const Tensor<float, Shape<1, 7>> col = reduce_sum<0>(p, keepdims);
  const auto each = [](const auto& t, auto want) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t j = 0; j < 7; ++j) wrong += std::abs(t(i, j) - want(i, j)) > 1e-4f * (1.f + std::abs(want(i, j)));
    return wrong;
  };
  // With the block cache off, every buffer is a system allocation: relu(matmul + 1) makes no more
  // of them than matmul alone written to the destination. (A bias would add its tile's.)
  auto& cache = detail::block_cache::instance();
  const std::size_t limit = cache.limit();
  Tensor<float, Shape<6, 7>> y;
  cache.set_limit(0);
  std::size_t before = cache.system_allocations();
  y = matmul(a, b);
  const std::size_t direct = cache.system_allocations() - before;
  before = cache.system_allocations();
  y = relu(matmul(a, b) + 1.f);
  const std::size_t fused = cache.system_allocations() - before;
  cache.set_limit(limit);
  CHECK(fused == direct);
  CHECK(each(y, [&](std::size_t i, std::size_t j) { return std::max(0.f, p(i, j) + 1.f); }) == 0);
  y = relu(matmul(a, b) + c);
  CHECK(each(y, [&](std::size_t i, std::size_t j) { return std::max(0.f, p(i, j) + c(j)); }) == 0);
  // The expression reads the destination: the product goes elsewhere first.
  Tensor<float, Shape<6, 7>> z = p + c;
  z = matmul(a, b) + z;
  CHECK(each(z, [&](std::size_t i, std::size_t j) { return 2.f * p(i, j) + c(j); }) == 0);
  // Two boundaries of the destination's extents (one gets it); one of other extents; one inside
  // another's operands; one under a view.
  y = matmul(a, b) * 2.f - matmul(a, b);
  CHECK(each(y, [&](std::size_t i, std::size_t j) { return p(i, j); }) == 0);
  y = matmul(a, b) - reduce_sum<0>(matmul(a, b), keepdims);
  CHECK(each(y, [&](std::size_t i, std::size_t j) { return p(i, j) - col(0, j); }) == 0);
  y = matmul(matmul(a, b), b2) + c;
  CHECK(each(y, [&](std::size_t i, std::size_t j) { return pp(i, j) + c(j); }) == 0);
  y = transpose(matmul(transpose(b), transpose(a))) + c;
  CHECK(each(y, [&](std::size_t i, std::size_t j) { return p(i, j) + c(j); }) == 0);
}

TEST_CASE("block cache: a request whose class has no block takes one up to 1.5x its size, which goes back to its own class") {
  auto& cache = detail::block_cache::instance();
  const std::size_t limit = cache.limit();
  cache.set_limit(0);  // empty
  cache.set_limit(limit);
  const std::size_t n = 5'000'000;  // 20 MB
  { Tensor<float, Shape<dyn>> full({n}); }
  const std::size_t before = cache.system_allocations();
  {
    Tensor<float, Shape<dyn>> smaller({n * 3 / 4});  // an epoch's last batch: the full batch's block
    smaller.data()[0] = 1;
  }
  { Tensor<float, Shape<dyn>> again({n}); }  // the block is back in its own class
  CHECK(cache.system_allocations() == before);
  { Tensor<float, Shape<dyn>> much_smaller({n * 2 / 5}); }  // more than two classes below: a block of its own
  CHECK(cache.system_allocations() == before + 1);
  { Tensor<float, Shape<dyn>> larger({n + n / 10}); }  // a larger class never takes a smaller block
  CHECK(cache.system_allocations() == before + 2);
}

TEST_CASE("variables carry a name and update in place") {
  Variable<float, Shape<2>> w(ones<float, Shape<2>>(), "dense/kernel");
  REQUIRE(w.name() == "dense/kernel");
  REQUIRE(w.trainable());
  w.assign_sub(w * 0.5f);
  REQUIRE(w(0) == 0.5f);
  w.assign_add(fill<float, Shape<2>>(1.f));
  REQUIRE(w(1) == 1.5f);
  w.assign_add(0.25f);  // a number, as tf.Variable.assign_add(0.25)
  w.assign_sub(1);
  REQUIRE(w(0) == 0.75f);
  Tensor<float, Shape<2>> x = w * 4.f;
  x += 1.f;
  x *= 2;
  x -= 0.5;
  x /= 4.f;
  REQUIRE(x(1) == 1.875f);  // ((0.75 * 4 + 1) * 2 - 0.5) / 4
}

TEST_CASE("maybe holds a value or none: emplace, reset, copies and moves, value() of none throws") {
  maybe<Tensor<float, Shape<dyn>>> g;
  CHECK_FALSE(g.has_value());
  CHECK_FALSE(bool(g));
  CHECK_THROWS_AS(g.value(), value_error);
  g.emplace(dims_t<1>{3});
  REQUIRE(g.has_value());
  g->data()[1] = 2.f;
  CHECK(g.value().size() == 3);
  maybe<Tensor<float, Shape<dyn>>> copy(g);
  copy->data()[1] = 5.f;
  CHECK((*g).data()[1] == 2.f);  // a copy holds its own value
  maybe<Tensor<float, Shape<dyn>>> moved(std::move(copy));
  REQUIRE(moved.has_value());
  CHECK(moved->data()[1] == 5.f);
  g = moved;
  CHECK(g->data()[1] == 5.f);
  g = maybe<Tensor<float, Shape<dyn>>>();
  CHECK_FALSE(g.has_value());
  // Each value made is destroyed once: by reset, by emplace over it, by the destructor.
  static int alive = 0;
  struct counted {
    counted() { ++alive; }
    counted(const counted&) { ++alive; }
    ~counted() { --alive; }
  };
  {
    maybe<counted> c;
    c.emplace();
    c.emplace();
    CHECK(alive == 1);
    c.reset();
    CHECK(alive == 0);
    c.emplace();
    maybe<counted> d(c);
    CHECK(alive == 2);
  }
  CHECK(alive == 0);
}

TEST_CASE("printing follows TensorFlow's str()") {
  Tensor<int32_t, Shape<2, 2>> t;
  t(0, 0) = 1; t(0, 1) = 2; t(1, 0) = 3; t(1, 1) = 4;
  std::ostringstream os;
  os << t;
  REQUIRE(os.str() == "ctflow.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)");
  std::ostringstream big;
  big << range<float>(2000.f);
  REQUIRE(big.str() == "ctflow.Tensor([0. 1. 2. ... 1997. 1998. 1999.], shape=(2000,), dtype=float32)");
}

TEST_CASE("range and fills") {
  auto r = range<int32_t>(3, 10, 3);
  REQUIRE(r.size() == 3);
  REQUIRE(r(2) == 9);
  REQUIRE(range<float>(5.f, 0.f, -2.f).size() == 3);
  REQUIRE_THROWS_AS(range<int32_t>(0, 5, 0), value_error);
  auto z = zeros<double, Shape<dyn, 2>>({3, 2});
  REQUIRE(z.size() == 6);
}

TEST_CASE("random values are seeded, deterministic and have the right moments") {
  auto a = random_uniform<float, Shape<10000>>(42, -1.0, 1.0);
  auto b = random_uniform<float, Shape<10000>>(42, -1.0, 1.0);
  auto c = random_uniform<float, Shape<10000>>(43, -1.0, 1.0);
  REQUIRE(std::equal(a.begin(), a.end(), b.begin()));
  REQUIRE(!std::equal(a.begin(), a.end(), c.begin()));
  for (float v : a) REQUIRE((v >= -1.f && v < 1.f));
  Tensor<float, Shape<>> mean = reduce_mean(a);
  REQUIRE(std::abs(mean()) < 0.03f);
  auto n = random_normal<double, Shape<20000>>(7, 1.0, 2.0);
  Tensor<double, Shape<>> m = reduce_mean(n), var = reduce_mean(square(n - 1.0));
  REQUIRE(m() == Approx(1.0).margin(0.05));
  REQUIRE(var() == Approx(4.0).epsilon(0.05));
  auto t = truncated_normal<float, Shape<5000>>(3, 0.0, 1.0);
  for (float v : t) REQUIRE(std::abs(v) <= 2.f);
}

TEST_CASE("the thread pool runs every task of every call exactly once, and rethrows a task's exception") {
  auto& pool = backend::cpu::pool();
  const int threads = pool.size();
  for (int size : {1, 2, 3, 4}) {
    config::set_num_threads(size);
    std::vector<std::atomic<int>> runs(std::size_t(size) * 1000);
    // Calls of every task count in quick succession (workers spinning), then a few after the
    // workers have gone to sleep: the caller may take any task, never one twice.
    for (int call = 0; call < 1000; ++call) {
      const int tasks = 1 + call % size;
      pool.run(tasks, [&](int t) { runs[std::size_t(call) * std::size_t(size) + std::size_t(t)].fetch_add(1); });
      if (call % 250 == 249) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (int call = 0; call < 1000; ++call)
      for (int t = 0; t < size; ++t) REQUIRE(runs[std::size_t(call) * std::size_t(size) + std::size_t(t)].load() == (t < 1 + call % size ? 1 : 0));
    std::atomic<int> ran{0};
    REQUIRE_THROWS_WITH(pool.run(size, [&](int t) {
      ran.fetch_add(1);
      if (t == size - 1) throw io_error("task " + std::to_string(t));
    }), "task " + std::to_string(size - 1));
    REQUIRE(ran.load() == size);
    int after = 0;
    pool.run(1, [&](int) { ++after; });
    REQUIRE(after == 1);
  }
  config::set_num_threads(threads);
}

TEST_CASE("thread count does not change results") {
  auto x = random_normal<float, Shape<300000>>(1);
  config::set_num_threads(1);
  Tensor<float, Shape<>> s1 = reduce_sum(x);
  Tensor<float, Shape<300000>> e1 = exp(x) * 0.5f + x;
  config::set_num_threads(2);
  Tensor<float, Shape<>> s2 = reduce_sum(x);
  Tensor<float, Shape<300000>> e2 = exp(x) * 0.5f + x;
  REQUIRE(s1() == s2());
  REQUIRE(std::equal(e1.begin(), e1.end(), e2.begin()));
  REQUIRE(config::get_num_threads() == 2);
  // Resizing the pool between parallel calls must not replay an earlier call.
  for (int round = 0; round < 5; ++round) {
    config::set_num_threads(2 - round % 2);
    Tensor<float, Shape<>> s = reduce_sum(x);
    REQUIRE(s() == s1());
  }
}

namespace {
/// Neither copied nor moved: a pack's member of this type is built where it lives.
struct pinned {
  int v;
  pinned(int x, std::vector<int>& order) : v(x) { order.push_back(x); }
  pinned(const pinned&) = delete;
  pinned& operator=(const pinned&) = delete;
};
}  // namespace

TEST_CASE("detail::pack builds its members in place and in order, and get and apply read and write them") {
  std::vector<int> order;
  ctflow::detail::pack<pinned, pinned, pinned> p{{{pinned(1, order)}, {pinned(2, order)}, {pinned(3, order)}}};
  CHECK(order == std::vector<int>{1, 2, 3});  // a Sequential's layers draw their seeds in this order
  CHECK(ctflow::detail::get<0>(p).v == 1);
  ctflow::detail::get<2>(p).v = 30;
  const auto& c = p;
  CHECK(ctflow::detail::get<2>(c).v == 30);
  CHECK(ctflow::detail::apply([](const pinned& a, const pinned& b, const pinned& d) { return a.v * 100 + b.v * 10 + d.v; }, c) == 150);
  // A reference member refers; the others hold their values.
  int x = 4;
  ctflow::detail::pack<int&, double> r{{{x}, {2.5}}};
  ctflow::detail::get<0>(r) = 5;
  CHECK(x == 5);
  CHECK(ctflow::detail::apply([](int& i, double d) { return i + d; }, r) == 7.5);
  ctflow::detail::pack<> none{{}};
  CHECK(ctflow::detail::apply([] { return 7; }, none) == 7);
}
