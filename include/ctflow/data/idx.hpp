#pragma once
/// @brief IDX files (the MNIST format; gzip or not) and the Keras-style loaders of MNIST and
/// Fashion-MNIST: `auto [train, test] = datasets::fashion_mnist::load_data();` finds the files
/// of Debian's dataset-fashion-mnist package by default.

#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "../core/tensor.hpp"
#include "../detail/file.hpp"
#include "../detail/raw.hpp"

namespace ctflow::data {

namespace detail {

template <class T> constexpr std::uint8_t idx_type_code() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return 0x08;
  else if constexpr (std::is_same_v<T, std::int8_t>) return 0x09;
  else if constexpr (std::is_same_v<T, std::int16_t>) return 0x0B;
  else if constexpr (std::is_same_v<T, std::int32_t>) return 0x0C;
  else if constexpr (std::is_same_v<T, float>) return 0x0D;
  else {
    static_assert(std::is_same_v<T, double>, "ctflow::data::read_idx: IDX holds uint8, int8, int16, int32, float32 or float64");
    return 0x0E;
  }
}

template <std::size_t R, class = std::make_index_sequence<R>> struct all_dyn;
template <std::size_t R, std::size_t... I> struct all_dyn<R, std::index_sequence<I...>> {
  using type = Shape<(void(I), dyn)...>;
};

}  // namespace detail

/// @brief The tensor in IDX bytes as a Tensor<T, S>: the file's dtype and rank must be T's and
/// S's, and its extents must fit S's static ones (io_error otherwise).
template <DType T, ShapeType S> Tensor<T, S> parse_idx(std::span<const std::uint8_t> b, const std::string& name) {
  constexpr int R = S::rank;
  const auto fail = [&](std::uint64_t at, const std::string& why) { ctflow::detail::throw_io("ctflow::data::read_idx", name, at, why); };
  if (b.size() < 4) fail(0, "file too short for the IDX magic number (" + std::to_string(b.size()) + " bytes)");
  if (b[0] != 0 || b[1] != 0) fail(0, "not an IDX file (the magic number must start with two zero bytes)");
  if (b[2] != detail::idx_type_code<T>())
    fail(2, "element type code " + std::to_string(b[2]) + " is not that of " + dtype_name<T>() + " (" +
                std::to_string(detail::idx_type_code<T>()) + ")");
  if (b[3] != R) fail(3, "rank " + std::to_string(b[3]) + ", expected " + std::to_string(R));
  const std::size_t header = 4 + 4 * std::size_t(R);
  if (b.size() < header) fail(4, "truncated dimensions");
  dims_t<std::size_t(R)> d{};
  const std::uint64_t avail = b.size() - header;
  std::uint64_t count = 1;
  bool fits = true;
  for (int k = 0; k < R; ++k) {
    const auto* p = b.data() + 4 + 4 * k;
    d[std::size_t(k)] = std::size_t(p[0]) << 24 | std::size_t(p[1]) << 16 | std::size_t(p[2]) << 8 | p[3];
    if (d[std::size_t(k)] != 0 && count > avail / d[std::size_t(k)]) fits = false;  // never overflows
    else count *= d[std::size_t(k)];
  }
  if (!matches_static<S>(d)) fail(4, "dimensions " + format_dims(d) + " do not fit " + format_dims(S::extents));
  if (!fits || count * sizeof(T) != avail)
    fail(header, "dimensions " + format_dims(d) + " need " + (fits ? std::to_string(count * sizeof(T)) : std::string("more")) +
                     " bytes of data, the file has " + std::to_string(avail));
  Tensor<T, S> t(d);
  ctflow::detail::load_raw(t.data(), b.subspan(header), false);  // IDX is big-endian
  return t;
}
/// @brief The tensor in IDX bytes, of dtype T and rank R with `dyn` extents.
template <DType T, int R> auto parse_idx(std::span<const std::uint8_t> b, const std::string& name) {
  return parse_idx<T, typename detail::all_dyn<std::size_t(R)>::type>(b, name);
}

/// @brief Reads an IDX file (gzip-compressed or not) as a Tensor<T, S>.
template <DType T, ShapeType S> Tensor<T, S> read_idx(const std::string& path) {
  return parse_idx<T, S>(ctflow::detail::read_file(path, "ctflow::data::read_idx"), path);
}
/// @brief Reads an IDX file (gzip-compressed or not) of dtype T and rank R.
template <DType T, int R> auto read_idx(const std::string& path) {
  return read_idx<T, typename detail::all_dyn<std::size_t(R)>::type>(path);
}

}  // namespace ctflow::data

namespace ctflow::datasets {

/// @brief Images [n, 28, 28] and labels [n], both uint8 (as Keras's load_data gives them).
using mnist_images = Tensor<std::uint8_t, Shape<dyn, 28, 28>>;
using mnist_labels = Tensor<std::uint8_t, Shape<dyn>>;
using mnist_split = std::pair<mnist_images, mnist_labels>;

namespace detail {

inline bool file_exists(const std::string& p) { return ::access(p.c_str(), R_OK) == 0; }

/// The four files of an MNIST-format directory, gzip'ed or not.
inline std::pair<mnist_split, mnist_split> load_mnist_format(const std::string& dir, const char* what) {
  const auto path = [&](const std::string& stem) {
    const std::string base = dir + "/" + stem;
    if (file_exists(base + ".gz")) return base + ".gz";
    if (file_exists(base)) return base;
    throw io_error(std::string(what) + ": neither " + base + ".gz nor " + base + " can be read");
  };
  const auto split = [&](const char* images, const char* labels) {
    auto x = data::read_idx<std::uint8_t, mnist_images::shape_type>(path(images));  // [n,28,28] checked there
    auto y = data::read_idx<std::uint8_t, mnist_labels::shape_type>(path(labels));
    if (x.dims()[0] != y.dims()[0])
      throw io_error(std::string(what) + ": " + std::to_string(x.dims()[0]) + " images but " + std::to_string(y.dims()[0]) + " labels in " + dir);
    return mnist_split{std::move(x), std::move(y)};
  };
  return {split("train-images-idx3-ubyte", "train-labels-idx1-ubyte"), split("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")};
}

}  // namespace detail

namespace fashion_mnist {
/// @brief Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr const char* default_dir = "/usr/share/datasets/fashion-mnist";
/// @brief keras.datasets.fashion_mnist.load_data(): {(x_train, y_train), (x_test, y_test)}.
inline std::pair<mnist_split, mnist_split> load_data(const std::string& dir = default_dir) {
  return detail::load_mnist_format(dir, "ctflow::datasets::fashion_mnist::load_data");
}
}  // namespace fashion_mnist

namespace mnist {
/// @brief keras.datasets.mnist.load_data() from a directory of the four IDX files.
inline std::pair<mnist_split, mnist_split> load_data(const std::string& dir) {
  return detail::load_mnist_format(dir, "ctflow::datasets::mnist::load_data");
}
}  // namespace mnist

}  // namespace ctflow::datasets
