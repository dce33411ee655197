#pragma once
/// @brief IDX files (the MNIST format; gzip or not) and the Keras-style loaders of MNIST and
/// Fashion-MNIST: `auto [train, test] = datasets::fashion_mnist::load_data();` finds the files
/// of Debian's dataset-fashion-mnist package by default.

#include <sys/stat.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/detail/raw.hpp>

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

namespace detail {

/// Checks an IDX header (magic, element type, rank: b holds at least 4 bytes) and reads its
/// extents (b holds the whole header); the data must then hold `count` elements.
template <DType T, ShapeType S>
dims_t<std::size_t(S::rank)> idx_header(const std::uint8_t* b, std::size_t have, const std::string& name) {
  constexpr int R = S::rank;
  const auto fail = [&](std::uint64_t at, const std::string& why) { ctflow::detail::throw_io("ctflow::data::read_idx", name, at, why); };
  if (have < 4) fail(0, "file too short for the IDX magic number (" + std::to_string(have) + " bytes)");
  if (b[0] != 0 || b[1] != 0) fail(0, "not an IDX file (the magic number must start with two zero bytes)");
  if (b[2] != idx_type_code<T>())
    fail(2, "element type code " + std::to_string(b[2]) + " is not that of " + dtype_name<T>() + " (" + std::to_string(idx_type_code<T>()) + ")");
  if (b[3] != R) fail(3, "rank " + std::to_string(b[3]) + ", expected " + std::to_string(R));
  if (have < 4 + 4 * std::size_t(R)) fail(4, "truncated dimensions");
  dims_t<std::size_t(R)> d{};
  for (int k = 0; k < R; ++k) {
    const auto* p = b + 4 + 4 * k;
    d[std::size_t(k)] = std::size_t(p[0]) << 24 | std::size_t(p[1]) << 16 | std::size_t(p[2]) << 8 | p[3];
  }
  if (!matches_static<S>(d)) fail(4, "dimensions " + format_dims(d) + " do not fit " + format_dims(S::extents));
  return d;
}

/// Elements of extents d when their bytes are at most `limit`, else nothing (never overflows).
template <class T, std::size_t R> std::optional<std::uint64_t> idx_count(const dims_t<R>& d, std::uint64_t limit) {
  std::uint64_t count = 1;
  for (auto e : d) {
    if (e != 0 && count > limit / sizeof(T) / e) return std::nullopt;
    count *= e;
  }
  return count;
}

}  // namespace detail

/// @brief The tensor in IDX bytes as a Tensor<T, S>: the file's dtype and rank must be T's and
/// S's, and its extents must fit S's static ones (io_error otherwise).
template <DType T, ShapeType S> Tensor<T, S> parse_idx(std::span<const std::uint8_t> b, const std::string& name) {
  const auto d = detail::idx_header<T, S>(b.data(), b.size(), name);
  const std::size_t header = 4 + 4 * std::size_t(S::rank);
  const std::uint64_t avail = b.size() - header;
  const auto count = detail::idx_count<T>(d, avail);
  if (!count || *count * sizeof(T) != avail)
    ctflow::detail::throw_io("ctflow::data::read_idx", name, header,
                             "dimensions " + format_dims(d) + " need " + (count ? std::to_string(*count * sizeof(T)) : std::string("more")) +
                                 " bytes of data, the file has " + std::to_string(avail));
  Tensor<T, S> t(d);
  ctflow::detail::load_raw(t.data(), b.subspan(header), false);  // IDX is big-endian
  return t;
}
/// @brief The tensor in IDX bytes, of dtype T and rank R with `dyn` extents.
template <DType T, int R> auto parse_idx(std::span<const std::uint8_t> b, const std::string& name) {
  return parse_idx<T, typename detail::all_dyn<std::size_t(R)>::type>(b, name);
}

/// @brief Reads an IDX file (gzip-compressed or not) as a Tensor<T, S>, streaming the data
/// straight into the tensor (memory: the tensor alone). The extents are trusted only as far as
/// the file can hold them (a gzip stream inflates at most 1032-fold).
template <DType T, ShapeType S> Tensor<T, S> read_idx(const std::string& path) {
  constexpr const char* what = "ctflow::data::read_idx";
  std::uint64_t file_size = 0;
  bool gzip = false;
  {
    ctflow::detail::input_file probe(path, ctflow::detail::compression::none, what);
    std::uint8_t magic[2] = {};
    gzip = probe.read(magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0) file_size = std::uint64_t(st.st_size);
  }
  ctflow::detail::input_file in(path, gzip ? ctflow::detail::compression::gzip : ctflow::detail::compression::none, what);
  std::uint8_t head[4 + 4 * max_rank];
  std::size_t have = in.read(head, 4);
  if (have == 4 && head[3] == S::rank) have += in.read(head + 4, 4 * std::size_t(S::rank));
  const auto d = detail::idx_header<T, S>(head, have, path);
  const std::uint64_t limit = gzip ? file_size * 1032 : file_size;
  const auto count = detail::idx_count<T>(d, limit);
  if (!count) ctflow::detail::throw_io(what, path, have, "dimensions " + format_dims(d) + " need more bytes than the file can hold");
  Tensor<T, S> t(d);
  const std::size_t bytes = std::size_t(*count * sizeof(T));
  const std::size_t got = in.read(t.data(), bytes);
  std::uint8_t extra = 0;
  if (got != bytes || in.read(&extra, 1) != 0)
    ctflow::detail::throw_io(what, path, have, "dimensions " + format_dims(d) + " need " + std::to_string(bytes) + " bytes of data, the file has " +
                                                   (got != bytes ? std::to_string(got) : "more"));
  ctflow::detail::to_native_order(t.data(), t.size(), false);  // IDX is big-endian
  return t;
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
CTFLOW_DECL std::pair<mnist_split, mnist_split> load_mnist_format(const std::string& dir, const char* what);

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

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/data/impl/idx.ipp>
#endif
