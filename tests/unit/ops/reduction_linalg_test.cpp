// Reductions, argmax/argmin, cumsum, matmul.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <algorithm>
#include <vector>

using namespace ctflow;

TEST_CASE("reductions over every axis pattern match a naive loop") {
  auto x = random_normal<double, Shape<3, 4, 5, 6>>(11);
  auto naive = [&](std::array<bool, 4> red) {
    std::vector<double> out(3 * 4 * 5 * 6, 0.0);
    for (std::size_t a = 0; a < 3; ++a) for (std::size_t b = 0; b < 4; ++b) for (std::size_t c = 0; c < 5; ++c) for (std::size_t d = 0; d < 6; ++d) {
      std::size_t idx[4] = {a, b, c, d}, o = 0;
      const std::size_t ext[4] = {3, 4, 5, 6};
      for (int k = 0; k < 4; ++k) if (!red[std::size_t(k)]) o = o * ext[k] + idx[k];
      out[o] += x(a, b, c, d);
    }
    return out;
  };
  auto close = [](const auto& t, const std::vector<double>& ref) {
    for (std::size_t i = 0; i < t.size(); ++i) REQUIRE(t.data()[i] == Approx(ref[i]).epsilon(1e-12));
  };
  close(eval(reduce_sum<0>(x)), naive({true, false, false, false}));
  close(eval(reduce_sum<-1>(x)), naive({false, false, false, true}));
  close(eval(reduce_sum<1, 2>(x)), naive({false, true, true, false}));
  close(eval(reduce_sum<0, 2>(x)), naive({true, false, true, false}));
  close(eval(reduce_sum<1, 3>(x)), naive({false, true, false, true}));
  close(eval(reduce_sum(x)), naive({true, true, true, true}));
  auto k = eval(reduce_sum<1>(x, keepdims));
  REQUIRE(k.dims() == dims_t<4>{3, 1, 5, 6});
}

TEST_CASE("mean, max, min, prod, any, all and dtype rules") {
  Tensor<float, Shape<2, 3>> x;
  float v[] = {1, -2, 3, 4, 5, -6};
  std::copy(v, v + 6, x.begin());
  Tensor<float, Shape<2>> mx = reduce_max<1>(x), mn = reduce_min<1>(x), pr = reduce_prod<1>(x), me = reduce_mean<1>(x);
  REQUIRE(mx(0) == 3.f);
  REQUIRE(mn(1) == -6.f);
  REQUIRE(pr(0) == -6.f);
  REQUIRE(me(1) == 1.f);
  Tensor<int32_t, Shape<3>> i;
  i(0) = 1; i(1) = 2; i(2) = 4;
  Tensor<int32_t, Shape<>> im = reduce_mean(i);
  REQUIRE(im() == 2);  // integer mean truncates
  Tensor<bool, Shape<2>> an = reduce_any<1>(x > 4.f), al = reduce_all<1>(x > -3.f);
  REQUIRE(!an(0));
  REQUIRE(an(1));
  REQUIRE(al(0));
  REQUIRE(!al(1));
  Tensor<float, Shape<0>> empty;
  Tensor<float, Shape<>> es = reduce_sum(empty), emax = reduce_max(empty);
  REQUIRE(es() == 0.f);
  REQUIRE(emax() == -std::numeric_limits<float>::infinity());
}

TEST_CASE("column reductions add the rows in row order") {
  // 37 rows: passes of several rows at a time, then single rows; every column sums in row order.
  auto x = random_uniform<float, Shape<37, 300>>(5);
  Tensor<float, Shape<300>> sums = reduce_sum<0>(x), maxima = reduce_max<0>(x);
  std::size_t wrong = 0;
  for (std::size_t j = 0; j < 300; ++j) {
    float s = x(0, j), m = x(0, j);
    for (std::size_t i = 1; i < 37; ++i) {
      s += x(i, j);
      m = std::max(m, x(i, j));
    }
    wrong += sums(j) != s;
    wrong += maxima(j) != m;
  }
  REQUIRE(wrong == 0);
}

TEST_CASE("large reductions are exact enough and identical across calls") {
  auto x = random_uniform<float, Shape<1000, 3000>>(9);
  Tensor<float, Shape<1000>> rows = reduce_sum<1>(x);
  Tensor<float, Shape<3000>> cols = reduce_sum<0>(x);
  double r0 = 0, c7 = 0;
  for (std::size_t j = 0; j < 3000; ++j) r0 += x(0, j);
  for (std::size_t i = 0; i < 1000; ++i) c7 += x(i, 7);
  REQUIRE(rows(0) == Approx(r0).epsilon(1e-5));
  REQUIRE(cols(7) == Approx(c7).epsilon(1e-5));
  // Column sums go through chunks of rows fixed by the shape: the same bits on any thread count.
  const int threads = int(backend::cpu::pool().size());
  config::set_num_threads(1);
  Tensor<float, Shape<3000>> cols1 = reduce_sum<0>(x);
  config::set_num_threads(3);
  Tensor<float, Shape<3000>> cols3 = reduce_sum<0>(x);
  config::set_num_threads(threads);
  for (std::size_t j = 0; j < 3000; ++j) REQUIRE((cols1(j) == cols(j) && cols3(j) == cols(j)));
  Tensor<float, Shape<>> all1 = reduce_sum(x), all2 = reduce_sum(x);
  REQUIRE(all1() == all2());
  REQUIRE(all1() == Approx(1.5e6).epsilon(2e-3));
}

TEST_CASE("argmax, argmin and cumsum") {
  Tensor<float, Shape<2, 4>> x;
  float v[] = {1, 7, 7, 0, 5, -1, 2, -1};
  std::copy(v, v + 8, x.begin());
  Tensor<int64_t, Shape<2>> am = argmax<1>(x), an = argmin<-1>(x);
  REQUIRE(am(0) == 1);  // first among ties
  REQUIRE(an(1) == 1);
  Tensor<int64_t, Shape<4>> a0 = argmax<0>(x);
  REQUIRE(a0(0) == 1);
  Tensor<float, Shape<2, 4>> c = cumsum<1>(x), ce = cumsum<1>(x, true), cr = cumsum<1>(x, false, true);
  REQUIRE(c(0, 3) == 15.f);
  REQUIRE(ce(0, 0) == 0.f);
  REQUIRE(ce(0, 3) == 15.f);
  REQUIRE(cr(1, 0) == 5.f);
  REQUIRE(cr(1, 3) == -1.f);
  Tensor<int32_t, Shape<1, 3>> ci = cumsum<1>(cast<int32_t>(slice<Shape<1, 3>>(x, {0, 0})) * 0 + 2);
  REQUIRE(ci(0, 2) == 6);
}

TEST_CASE("matmul against a naive product, with transposes, batches and odd sizes") {
  auto check = [](std::size_t m, std::size_t n, std::size_t k) {
    auto a = random_normal<float, Shape<dyn, dyn>>(1, 0, 1, {m, k});
    auto b = random_normal<float, Shape<dyn, dyn>>(2, 0, 1, {k, n});
    Tensor<float, Shape<dyn, dyn>> c = matmul(a, b);
    Tensor<float, Shape<dyn, dyn>> at = transpose(a), bt = transpose(b);
    Tensor<float, Shape<dyn, dyn>> c2 = matmul(at, bt, transpose_a, transpose_b);
    Tensor<float, Shape<dyn, dyn>> c3 = matmul(a, bt, transpose_b);
    // Every (1 + size / 7)-th row and column, and the last ones, where the blocks' remainders are.
    const auto samples = [](std::size_t size) {
      std::vector<std::size_t> at;
      for (std::size_t i = 0; i < size; i += 1 + size / 7) at.push_back(i);
      if (at.back() != size - 1) at.push_back(size - 1);
      return at;
    };
    for (std::size_t i : samples(m))
      for (std::size_t j : samples(n)) {
        double s = 0;
        for (std::size_t p = 0; p < k; ++p) s += double(a(i, p)) * double(b(p, j));
        REQUIRE(c(i, j) == Approx(s).margin(1e-3));
        REQUIRE(c2(i, j) == Approx(s).margin(1e-3));
        REQUIRE(c3(i, j) == Approx(s).margin(1e-3));
      }
  };
  check(1, 1, 1);
  check(1, 128, 784);
  check(1, 300, 785);  // a row of A: k in two runs and a step left over, two whole B passes and a rest
  check(1, 130, 1);    // k shorter than the runs
  check(8, 10, 128);
  check(16, 16, 16);
  check(13, 7, 31);  // one vector across, 8 rows and a remainder, k split unevenly
  check(24, 16, 70);  // one whole vector across: A's values in vectors for 64 steps, 6 left over
  check(1, 16, 33);
  check(37, 45, 53);
  // After the blocks of 4 vectors, 3 vectors and part of a fourth: for 16 lanes (AVX-512) 50 and
  // 63 columns, for 4 (NEON) 13, 47 and 113; 8 (AVX2) 29 and 63.
  check(1, 50, 7);
  check(5, 63, 20);
  check(2, 113, 9);
  check(3, 13, 5);
  check(4, 47, 3);
  check(1, 29, 11);
  check(200, 333, 129);
  check(513, 67, 400);
  check(1601, 801, 300);  // packed: several blocks of rows, two of columns and of k; partial micro-tiles
  check(4100, 330, 20);  // packed, with more rows than A's kept packing holds
}

namespace {
/// How many elements of c and of c2, both computed as a * b, differ from the loop definition by
/// more than margin.
template <class A, class B, class C> std::size_t product_mismatches(const A& a, const B& b, const C& c, const C& c2, double margin) {
  const std::size_t m = c.dims()[0], n = c.dims()[1], k = a.dims()[1];
  std::size_t bad = 0;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t p = 0; p < k; ++p) s += double(a(i, p)) * double(b(p, j));
      bad += c(i, j) != Approx(s).margin(margin);
      bad += c2(i, j) != Approx(s).margin(margin);
    }
  return bad;
}

/// A packed product (B over 320 columns wide, or transposed) at every element, with B row-major
/// and transposed: its columns make whole groups of four micro-panels, single panels and a partial
/// one; k makes a whole block and a partial one; rows make whole micro-tiles and a partial one.
template <class T> void check_packed_product(std::size_t m, std::size_t n, std::size_t k) {
  const auto a = random_normal<T, Shape<dyn, dyn>>(5, 0, 1, {m, k});
  const auto b = random_normal<T, Shape<dyn, dyn>>(6, 0, 1, {k, n});
  const Tensor<T, Shape<dyn, dyn>> bt = transpose(b);
  const Tensor<T, Shape<dyn, dyn>> c = matmul(a, b), c2 = matmul(a, bt, transpose_b);
  CHECK(product_mismatches(a, b, c, c2, 1e-3) == 0);
}

/// A static product (the unrolled small kernel where its operands are contiguous) and its
/// transpose_b form (the general path) against the loop definition, at every element.
template <class T, std::size_t M, std::size_t K, std::size_t N> void check_static_product() {
  const auto a = random_normal<T, Shape<M, K>>(3, 0, 1);
  const auto b = random_normal<T, Shape<K, N>>(4, 0, 1);
  const Tensor<T, Shape<M, N>> c = matmul(a, b);
  const Tensor<T, Shape<N, K>> bt = transpose(b);
  const Tensor<T, Shape<M, N>> c2 = matmul(a, bt, transpose_b);
  CHECK(product_mismatches(a, b, c, c2, 1e-4) == 0);
}
}  // namespace

TEST_CASE("packed products hold at every element for float and double") {
  // Micro-panels of 32 floats: 369 = 2 groups of 4 + 3 single + 17. Of 16 doubles: 375 = 5
  // groups of 4 + 3 single + 7.
  check_packed_product<float>(150, 369, 300);
  check_packed_product<double>(77, 375, 290);
  check_packed_product<float>(40, 1000, 9);  // three column blocks of 256 and a partial one, k of a few steps
}

TEST_CASE("small static products (unrolled, sizes as constants) equal their loop definition") {
  check_static_product<float, 8, 128, 10>();   // A's values in vectors, 16 steps at a time
  check_static_product<float, 8, 37, 10>();    // and then k split three ways with two steps left over
  check_static_product<float, 12, 50, 16>();   // 12 rows, 4 of them shuffled; k split two ways
  check_static_product<float, 16, 16, 16>();   // 16 rows in one tile
  check_static_product<float, 13, 7, 10>();    // a partial vector, rows short of a tile
  check_static_product<float, 16, 9, 40>();    // three vectors across: tiles of 5 rows and a remainder
  check_static_product<float, 3, 256, 64>();   // four vectors across
  check_static_product<float, 1, 5, 1>();
  check_static_product<double, 9, 11, 20>();   // double: 8 lanes
}

TEST_CASE("batched matmul broadcasts batch extents") {
  auto a = random_normal<double, Shape<3, 4, 5>>(1);
  auto b = random_normal<double, Shape<5, 2>>(2);
  Tensor<double, Shape<3, 4, 2>> c = matmul(a, b);
  for (std::size_t q = 0; q < 3; ++q) {
    double s = 0;
    for (std::size_t p = 0; p < 5; ++p) s += a(q, 3, p) * b(p, 1);
    REQUIRE(c(q, 3, 1) == Approx(s).epsilon(1e-12));
  }
  Tensor<int32_t, Shape<2, 2>> ia = fill<int32_t, Shape<2, 2>>(3);
  Tensor<int32_t, Shape<2, 2>> ic = matmul(ia, ia);
  REQUIRE(ic(1, 0) == 18);
  Tensor<float, Shape<dyn, 3>> x({2, 3});
  Tensor<float, Shape<4, 5>> w;
  REQUIRE_THROWS_WITH(matmul(x, Tensor<float, Shape<dyn, 5>>({4, 5})), "ctflow::matmul: inner dimensions differ: [2,3] x [4,5]");
  (void)w;
}

TEST_CASE("matmul fuses into element-wise expressions and results do not depend on threads") {
  auto x = random_normal<float, Shape<64, 784>>(3);
  auto w = random_normal<float, Shape<784, 256>>(4);
  auto bias = random_normal<float, Shape<256>>(5);
  config::set_num_threads(1);
  Tensor<float, Shape<64, 256>> h1 = relu(matmul(x, w) + bias);
  config::set_num_threads(2);
  Tensor<float, Shape<64, 256>> h2 = relu(matmul(x, w) + bias);
  REQUIRE(std::equal(h1.begin(), h1.end(), h2.begin()));
  for (float v : h1) REQUIRE(v >= 0.f);
  // A narrow B in L2, rows not a multiple of 8: threads split rows where one thread's tiles do.
  auto x2 = random_normal<float, Shape<1001, 200>>(6);
  auto w2 = random_normal<float, Shape<200, 12>>(7);
  config::set_num_threads(1);
  Tensor<float, Shape<1001, 12>> p1 = matmul(x2, w2);
  config::set_num_threads(2);
  Tensor<float, Shape<1001, 12>> p2 = matmul(x2, w2);
  REQUIRE(std::equal(p1.begin(), p1.end(), p2.begin()));
  double s = 0;
  for (std::size_t p = 0; p < 200; ++p) s += double(x2(1000, p)) * double(w2(p, 11));
  REQUIRE(p1(1000, 11) == Approx(s).margin(1e-3));
  // A row vector times a B of more than half a core's L2 (a dense layer at batch 1): on two
  // threads each takes one of the two runs of k of the widest tiles, k odd (its last row goes to
  // the first run), 300 columns (with AVX-512's 16 lanes two tiles of 128, then narrower ones on
  // the first thread); and added into C.
  auto row = random_normal<float, Shape<1, 1601>>(8);
  auto wide = random_normal<float, Shape<1601, 300>>(9);
  Tensor<float, Shape<1, 300>> added[2];
  for (int threads : {1, 2}) {
    config::set_num_threads(threads);
    added[threads - 1] = fill<float, Shape<1, 300>>(0.5f);
    backend::cpu::gemm::gemm<float>(1, 300, 1601, row.data(), 1601, 1, wide.data(), 300, 1, added[threads - 1].data(), 300, true);
  }
  config::set_num_threads(1);
  Tensor<float, Shape<1, 300>> q1 = matmul(row, wide);
  config::set_num_threads(2);
  Tensor<float, Shape<1, 300>> q2 = matmul(row, wide);
  REQUIRE(std::equal(q1.begin(), q1.end(), q2.begin()));
  REQUIRE(std::equal(added[0].begin(), added[0].end(), added[1].begin()));
  for (std::size_t j : {0, 127, 128, 255, 256, 299}) {
    double e = 0;
    for (std::size_t p = 0; p < 1601; ++p) e += double(row(0, p)) * double(wide(p, j));
    REQUIRE(q1(0, j) == Approx(e).margin(1e-3));
    REQUIRE(added[0](0, j) == Approx(e + 0.5).margin(1e-3));
  }
}

TEST_CASE("tensordot contracts trailing axes of a with leading axes of b") {
  auto a = random_normal<double, Shape<2, 3, 4>>(1);
  auto b = random_normal<double, Shape<3, 4, 5>>(2);
  Tensor<double, Shape<2, 5>> c = tensordot<2>(a, b);
  auto w = random_normal<double, Shape<4, 5>>(3);
  Tensor<double, Shape<2, 3, 5>> last = tensordot<1>(a, w);
  double s = 0, o = 0;
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t j = 0; j < 4; ++j) s += a(1, i, j) * b(i, j, 4);
  for (std::size_t j = 0; j < 4; ++j) o += a(1, 2, j) * w(j, 3);
  REQUIRE(c(1, 4) == Approx(s).epsilon(1e-12));
  REQUIRE(last(1, 2, 3) == Approx(o).epsilon(1e-12));
  Tensor<double, Shape<dyn, 4>> x({2, 4});
  Tensor<double, Shape<dyn, 5>> y({3, 5});
  REQUIRE_THROWS_AS((tensordot<1>(x, y)), shape_error);
}
