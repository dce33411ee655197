// Dataset and every transformation: values, order, cardinality, edge cases (empty input,
// remainders, early exit with prefetch running, errors surfacing in order), seeded shuffling,
// and a steady-state pipeline that allocates nothing per element.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include <ctflow/ctflow.hpp>
#include <ctflow/data/dataset.hpp>

#include "../counting_new.hpp"  // every operator new in the process is counted

using namespace ctflow;


namespace {
/// The int64 scalars of a dataset of rank-0 tensors.
template <class D> std::vector<std::int64_t> values(const D& ds) {
  std::vector<std::int64_t> v;
  for (const auto& x : ds) v.push_back(std::int64_t(x.data()[0]));
  return v;
}
std::vector<std::int64_t> iota(std::int64_t a, std::int64_t b) {
  std::vector<std::int64_t> v(std::size_t(b - a));
  std::iota(v.begin(), v.end(), a);
  return v;
}
}  // namespace

TEST_CASE("from_tensor_slices: rows of one tensor, tuples of rows of several") {
  Tensor<float, Shape<4, 2>> x = reshape<Shape<4, 2>>(range<float>(0.f, 8.f));
  Tensor<std::int32_t, Shape<dyn>> y({4});
  for (int i = 0; i < 4; ++i) y.data()[i] = 10 * i;
  auto single = data::from_tensor_slices(x);
  static_assert(std::is_same_v<decltype(single)::element_type, Tensor<float, Shape<2>>>);
  REQUIRE(single.cardinality() == 4);
  int row = 0;
  for (const auto& r : single) {
    REQUIRE(r(0) == float(2 * row));
    REQUIRE(r(1) == float(2 * row + 1));
    ++row;
  }
  REQUIRE(row == 4);
  auto pairs = data::from_tensor_slices(x, y);
  static_assert(std::is_same_v<decltype(pairs)::element_type, std::tuple<Tensor<float, Shape<2>>, Tensor<std::int32_t, Shape<>>>>);
  row = 0;
  for (const auto& [a, b] : pairs) {
    REQUIRE(a(1) == float(2 * row + 1));
    REQUIRE(b.data()[0] == 10 * row);
    ++row;
  }
  REQUIRE(row == 4);
  Tensor<std::int32_t, Shape<dyn>> short_y({3});
  REQUIRE_THROWS_WITH(data::from_tensor_slices(x, short_y), "ctflow::data::from_tensor_slices: first extents differ: [4,2] x [3]");
  // Empty input: no element, whatever follows.
  Tensor<float, Shape<dyn, 3>> none({0, 3});
  auto empty = data::from_tensor_slices(none).batch(4).repeat(3);
  REQUIRE(empty.cardinality() == 0);
  REQUIRE(empty.begin() == empty.end());
}

TEST_CASE("range, take, skip, concatenate, zip and their cardinalities") {
  REQUIRE(values(data::range(5)) == iota(0, 5));
  REQUIRE(values(data::range(10, 0, -3)) == std::vector<std::int64_t>{10, 7, 4, 1});
  REQUIRE(data::range(10, 0, -3).cardinality() == 4);
  REQUIRE(data::range(3, 3).cardinality() == 0);
  REQUIRE_THROWS_AS(data::range(0, 5, 0), value_error);
  REQUIRE(values(data::range(10).skip(3).take(4)) == iota(3, 7));
  REQUIRE(data::range(10).skip(3).take(4).cardinality() == 4);
  REQUIRE(values(data::range(3).take(-1)) == iota(0, 3));
  REQUIRE(values(data::range(3).skip(-1)).empty());
  REQUIRE(values(data::range(3).skip(5)).empty());
  REQUIRE(data::range(3).skip(5).cardinality() == 0);
  REQUIRE(values(data::range(3).concatenate(data::range(7, 9))) == std::vector<std::int64_t>{0, 1, 2, 7, 8});
  REQUIRE(data::range(3).concatenate(data::range(7, 9)).cardinality() == 5);
  auto z = data::zip(data::range(3), data::range(100, 200).map([](auto v) { return cast<float>(v) * 0.5f; }));
  REQUIRE(z.cardinality() == 3);
  std::vector<float> seen;
  for (const auto& [a, b] : z) seen.push_back(float(a.data()[0]) + b.data()[0]);
  REQUIRE(seen == std::vector<float>{50.f, 51.5f, 53.f});
  REQUIRE(data::zip(data::range(3).repeat(), data::range(5)).cardinality() == 5);
  REQUIRE(data::range(3).repeat().take(7).cardinality() == 7);
  REQUIRE(data::range(3).filter([](auto) { return true; }).cardinality() == data::unknown_cardinality);
}

TEST_CASE("map: expressions are evaluated; parallel map keeps the order and surfaces errors in place") {
  auto squares = data::range(200).map([](auto v) { return v * v + 1; });
  std::vector<std::int64_t> want;
  for (std::int64_t i = 0; i < 200; ++i) want.push_back(i * i + 1);
  REQUIRE(values(squares) == want);
  for (int threads : {2, 3, data::AUTOTUNE}) {
    auto par = data::range(200).map([](auto v) {
      if (v.data()[0] % 7 == 0) std::this_thread::yield();  // uneven work: results finish out of order
      return v * v + 1;
    }, threads);
    REQUIRE(values(par) == want);
    REQUIRE(values(par) == want);  // a second pass
  }
  auto failing = data::range(50).map([](auto v) {
    if (v.data()[0] == 20) throw std::runtime_error("element 20");
    return v;
  }, 4);
  std::vector<std::int64_t> before;
  try {
    for (const auto& v : failing) before.push_back(v.data()[0]);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    REQUIRE(std::string(e.what()) == "element 20");
  }
  REQUIRE(before == iota(0, 20));
  REQUIRE_THROWS_AS(data::range(3).map([](auto v) { return v; }, 0), value_error);
  // A map returning a tuple, and numbers becoming rank-0 tensors.
  auto pair = data::range(3).map([](auto v) { return std::tuple{v, double(v.data()[0]) / 2}; });
  static_assert(std::is_same_v<decltype(pair)::element_type, std::tuple<Tensor<std::int64_t, Shape<>>, Tensor<double, Shape<>>>>);
  double sum = 0;
  for (const auto& [a, b] : pair) sum += b.data()[0];
  REQUIRE(sum == 1.5);
}

TEST_CASE("filter keeps the elements whose predicate holds (bool or a rank-0 tensor)") {
  REQUIRE(values(data::range(10).filter([](const auto& v) { return v.data()[0] % 3 == 0; })) == std::vector<std::int64_t>{0, 3, 6, 9});
  REQUIRE(values(data::range(10).filter([](const auto& v) { return v > std::int64_t(6); })) == iota(7, 10));
  REQUIRE(values(data::range(10).filter([](const auto&) { return false; })).empty());
}

TEST_CASE("shuffle: TensorFlow's buffer, seeded, reshuffled each iteration") {
  const auto in = iota(0, 100);
  auto a = data::range(100).shuffle(10, 7);
  const auto first = values(a), second = values(a);
  auto sorted = first;
  std::sort(sorted.begin(), sorted.end());
  REQUIRE(sorted == in);  // a permutation
  REQUIRE(first != in);
  REQUIRE(first != second);  // reshuffled on the second pass
  // The buffer bounds how far an element moves ahead: output k comes from inputs [0, k + 10).
  for (std::size_t k = 0; k < first.size(); ++k) REQUIRE(first[k] < std::int64_t(k) + 10);
  // The same pipeline built again gives the same sequence of passes.
  auto b = data::range(100).shuffle(10, 7);
  REQUIRE(values(b) == first);
  REQUIRE(values(b) == second);
  REQUIRE(values(data::range(100).shuffle(10, 8)) != first);
  auto fixed = data::range(100).shuffle(10, 7, false);
  REQUIRE(values(fixed) == values(fixed));
  REQUIRE(values(data::range(20).shuffle(1, 3)) == iota(0, 20));  // a buffer of one keeps the order
  auto whole = values(data::range(50).shuffle(1000, 1));          // buffer larger than the input
  std::sort(whole.begin(), whole.end());
  REQUIRE(whole == iota(0, 50));
  // repeat after shuffle: every epoch is a permutation, epochs differ, and the run is reproducible.
  auto epochs = values(data::range(30).shuffle(30, 5).repeat(3));
  REQUIRE(epochs.size() == 90);
  REQUIRE(epochs == values(data::range(30).shuffle(30, 5).repeat(3)));
  for (int e = 0; e < 3; ++e) {
    std::vector<std::int64_t> one(epochs.begin() + 30 * e, epochs.begin() + 30 * (e + 1));
    std::sort(one.begin(), one.end());
    REQUIRE(one == iota(0, 30));
  }
  REQUIRE(!std::equal(epochs.begin(), epochs.begin() + 30, epochs.begin() + 30));
  REQUIRE_THROWS_AS(data::range(3).shuffle(0), value_error);
  // Over from_tensor_slices the buffer holds indices; the sequence is the one a buffer of
  // elements gives (range's), pass after pass, and tuples of rows stay together.
  Tensor<std::int64_t, Shape<100>> rows = range<std::int64_t>(0, 100);
  auto by_index = data::from_tensor_slices(rows).shuffle(10, 7);
  REQUIRE(values(by_index) == first);
  REQUIRE(values(by_index) == second);
  Tensor<std::int64_t, Shape<100, 2>> pairs = reshape<Shape<100, 2>>(range<std::int64_t>(0, 200));
  std::vector<std::int64_t> firsts;
  for (const auto& [row, label] : data::from_tensor_slices(pairs, rows).shuffle(10, 7)) {
    REQUIRE(row(1) == 2 * label() + 1);
    firsts.push_back(label());
  }
  REQUIRE(firsts == first);
}

TEST_CASE("batch: dyn extent with the remainder, static extent when dropping it") {
  auto b = data::range(10).batch(4);
  static_assert(std::is_same_v<decltype(b)::element_type, Tensor<std::int64_t, Shape<dyn>>>);
  REQUIRE(b.cardinality() == 3);
  std::vector<std::size_t> sizes;
  std::int64_t total = 0;
  for (const auto& x : b) {
    sizes.push_back(x.dims()[0]);
    for (auto v : x) total += v;
  }
  REQUIRE(sizes == std::vector<std::size_t>{4, 4, 2});
  REQUIRE(total == 45);
  REQUIRE(data::range(10).batch(4, true).cardinality() == 2);
  auto s = data::from_tensor_slices(fill<float, Shape<10, 3>>(1.f), Tensor<std::int32_t, Shape<10>>()).batch<4>();
  static_assert(std::is_same_v<decltype(s)::element_type, std::tuple<Tensor<float, Shape<4, 3>>, Tensor<std::int32_t, Shape<4>>>>);
  int n = 0;
  for (const auto& [x, y] : s) {
    REQUIRE(x(3, 2) == 1.f);
    ++n;
  }
  REQUIRE(n == 2);
  REQUIRE(s.cardinality() == 2);
  // Elements of varying shape: batch refuses, padded_batch pads to the longest in each batch.
  auto ragged = data::range(1, 6).map([](auto v) {
    Tensor<float, Shape<dyn>> t({std::size_t(v.data()[0])});
    std::fill(t.begin(), t.end(), float(v.data()[0]));
    return t;
  });
  REQUIRE_THROWS_WITH(values(ragged.batch(2).map([](auto t) { return reduce_sum(t); })),
                      Catch::Contains("ctflow::data::batch: element 1 of a batch has shape [2], element 0 has [1]"));
  std::vector<std::vector<std::size_t>> shapes;
  std::vector<float> firsts_pad;
  for (const auto& t : ragged.padded_batch(2, -1.0)) {
    shapes.push_back({t.dims()[0], t.dims()[1]});
    firsts_pad.push_back(t(0, t.dims()[1] - 1));
  }
  REQUIRE(shapes == std::vector<std::vector<std::size_t>>{{2, 2}, {2, 4}, {1, 5}});
  REQUIRE(firsts_pad == std::vector<float>{-1.f, -1.f, 5.f});
  REQUIRE_THROWS_AS(data::range(3).batch(0), value_error);
}

TEST_CASE("repeat: a count or forever; an empty pass ends it") {
  REQUIRE(values(data::range(3).repeat(2)) == std::vector<std::int64_t>{0, 1, 2, 0, 1, 2});
  REQUIRE(data::range(3).repeat(2).cardinality() == 6);
  REQUIRE(data::range(3).repeat().cardinality() == data::infinite_cardinality);
  REQUIRE(values(data::range(3).repeat().take(8)) == std::vector<std::int64_t>{0, 1, 2, 0, 1, 2, 0, 1});
  REQUIRE(values(data::range(3).repeat(0)).empty());
  REQUIRE(values(data::range(0).repeat()).empty());  // terminates
}

TEST_CASE("prefetch: same elements; an early exit stops the producer; errors surface in order") {
  REQUIRE(values(data::range(100).prefetch(3)) == iota(0, 100));
  REQUIRE(values(data::range(100).map([](auto v) { return v; }, 2).prefetch(data::AUTOTUNE)) == iota(0, 100));
  for (int trial = 0; trial < 20; ++trial) {  // leave an infinite pipeline with the producer busy
    int n = 0;
    for (const auto& v : data::range(1000).repeat().prefetch(2)) {
      REQUIRE(v.data()[0] == n % 1000);
      if (++n == 5) break;
    }
    REQUIRE(n == 5);
  }
  auto failing = data::range(10).map([](auto v) {
    if (v.data()[0] == 6) throw std::runtime_error("six");
    return v;
  }).prefetch(4);
  std::vector<std::int64_t> got;
  REQUIRE_THROWS_WITH([&] { for (const auto& v : failing) got.push_back(v.data()[0]); }(), "six");
  REQUIRE(got == iota(0, 6));
  REQUIRE_THROWS_AS(data::range(3).prefetch(0), value_error);
}

TEST_CASE("from_generator and cache: the cache replays the first complete pass") {
  int made = 0;
  auto gen = data::from_generator([&made] {
    ++made;
    return [i = 0]() mutable -> std::optional<std::int64_t> {
      if (i == 4) return std::nullopt;
      return i++ * 10;
    };
  });
  REQUIRE(gen.cardinality() == data::unknown_cardinality);
  REQUIRE(values(gen) == std::vector<std::int64_t>{0, 10, 20, 30});
  REQUIRE(made == 1);
  auto cached = gen.cache();
  for (const auto& v : cached.take(2)) (void)v;  // a partial pass caches nothing
  REQUIRE(made == 2);
  REQUIRE(values(cached) == std::vector<std::int64_t>{0, 10, 20, 30});
  REQUIRE(made == 3);
  REQUIRE(values(cached) == std::vector<std::int64_t>{0, 10, 20, 30});
  REQUIRE(values(cached.repeat(2)).size() == 8);
  REQUIRE(made == 3);  // replayed, never generated again
}

TEST_CASE("a static-shaped pipeline allocates nothing per element once warm") {
  Tensor<std::uint8_t, Shape<dyn, 28, 28>> images({4096, 28, 28});
  Tensor<std::uint8_t, Shape<dyn>> labels({4096});
  for (std::size_t i = 0; i < images.size(); ++i) images.data()[i] = std::uint8_t(i * 7);
  for (std::size_t i = 0; i < labels.size(); ++i) labels.data()[i] = std::uint8_t(i % 10);
  auto ds = data::from_tensor_slices(images, labels)
                .map([](auto x, auto y) { return std::tuple{cast<float>(x) / 255.0f, cast<std::int32_t>(y)}; })
                .shuffle(64, 1)
                .batch<32>()
                .prefetch(2);
  static_assert(std::is_same_v<decltype(ds)::element_type, std::tuple<Tensor<float, Shape<32, 28, 28>>, Tensor<std::int32_t, Shape<32>>>>);
  auto it = ds.begin();
  for (int i = 0; i < 16; ++i) ++it;  // warm
  const std::size_t blocks = ctflow::detail::block_cache::instance().system_allocations();
  const std::size_t before = counting_new::calls.load();
  double sum = 0;
  for (int i = 0; i < 96; ++i, ++it) sum += double(std::get<0>(*it)(31, 27, 27)) + std::get<1>(*it).data()[0];
  REQUIRE(counting_new::calls.load() == before);
  REQUIRE(ctflow::detail::block_cache::instance().system_allocations() == blocks);
  REQUIRE(sum > 0);
}
