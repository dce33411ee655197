#pragma once
/// @brief safetensors files (the format of Hugging Face's `safetensors`, readable by PyTorch and
/// NumPy tools): `io::safetensors::save_file` writes any set of named tensors, `safe_open` maps
/// a file and hands out its tensors by name, as copies (`get`) or zero-copy views (`view`).
///
/// Layout: uint64 header length N, N bytes of JSON
/// `{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, "__metadata__": {...}}`,
/// then the data; offsets are relative to the data and 64-bit, so files may exceed 4 GiB. Every
/// header field is validated before any tensor is read (a header of at most 100 MB, offsets in
/// range, contiguous and non-overlapping, sizes equal to shape x dtype); a bad file gives io_error
/// naming the file, the tensor and the reason.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/linkage.hpp>

namespace ctflow::io {

static_assert(std::endian::native == std::endian::little, "ctflow::io: safetensors data is little-endian; so must the host be");

/// @brief The safetensors code of a ctflow dtype ("F32", "I64", "BOOL", ...).
template <DType T> constexpr const char* safetensors_dtype() { return dtype_info<T>::safetensors; }

/// @brief Bytes per element of a safetensors dtype code; 0 for a code the format does not define.
CTFLOW_DECL std::size_t safetensors_dtype_size(std::string_view code);

/// @brief A contiguous tensor seen as bytes with a dtype and a shape: what writers take. Built
/// implicitly from a Tensor, a Variable or a contiguous TensorView (which must outlive it).
struct tensor_ref {
  std::string_view dtype;
  std::vector<std::uint64_t> shape;
  const void* data = nullptr;
  std::uint64_t nbytes = 0;

  tensor_ref(std::string_view dtype_code, std::vector<std::uint64_t> extents, const void* p, std::uint64_t bytes)
      : dtype(dtype_code), shape(std::move(extents)), data(p), nbytes(bytes) {}
  template <class T, class S, class D> tensor_ref(const Tensor<T, S, D>& t)
      : dtype(safetensors_dtype<T>()), shape(t.dims().begin(), t.dims().end()), data(t.data()), nbytes(t.size() * sizeof(T)) {}
  template <class T, class S, class D> tensor_ref(const TensorView<T, S, D>& v)
      : dtype(safetensors_dtype<std::remove_const_t<T>>()), shape(v.dims().begin(), v.dims().end()), data(v.data()),
        nbytes(v.size() * sizeof(T)) {
    if (v.strides() != row_major_strides(v.dims()))
      throw value_error("ctflow::io::tensor_ref: a strided view cannot be written; evaluate it into a Tensor first");
  }
};

namespace safetensors {

/// @brief The largest header a reader accepts (as the reference implementation).
inline constexpr std::uint64_t max_header_size = 100'000'000;

/// @brief One tensor of a file: dtype code, extents and byte range within the data.
struct TensorInfo {
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin = 0, end = 0;
};

namespace detail {

inline constexpr const char* what = "ctflow::io::safetensors";

[[noreturn]] CTFLOW_DECL void fail(const std::string& file, const std::string& why);
[[noreturn]] CTFLOW_DECL void fail(const std::string& file, const std::string& tensor, const std::string& why);

/// Parses and validates the header of the bytes of a whole file; returns the data's offset.
CTFLOW_DECL std::uint64_t parse_header(std::span<const std::uint8_t> file, const std::string& name, std::map<std::string, TensorInfo>& index,
                                       std::map<std::string, std::string>& metadata);

}  // namespace detail

/// @brief A safetensors file opened for reading (safetensors' `safe_open`): the file is mapped,
/// its header validated; tensors are read on demand.
class File {
 public:
  /// @brief Maps and validates the file at path.
  explicit File(const std::string& path);
  /// @brief Validates bytes held by the caller (they must outlive the File).
  File(std::span<const std::uint8_t> bytes, std::string name);

  /// @brief The tensor names, sorted.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& [name, info] : index_) k.push_back(name);
    return k;
  }
  /// @brief Whether the file holds tensor key, and its entry (io_error when it does not).
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  const TensorInfo& info(const std::string& key) const {
    const auto it = index_.find(key);
    if (it == index_.end()) detail::fail(name_, key, "no such tensor in the file");
    return it->second;
  }
  /// @brief The `__metadata__` strings.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// @brief The raw little-endian bytes of a tensor.
  std::span<const std::uint8_t> bytes(const std::string& key) const {
    const TensorInfo& i = info(key);
    return bytes_.subspan(std::size_t(data_ + i.begin), std::size_t(i.end - i.begin));
  }
  /// @brief The file's path (or the name given with the bytes), as messages show it.
  const std::string& name() const { return name_; }

  /// @brief Checks that tensor key can be read as dtype T with rank R and the given static extents
  /// (dyn: any); returns its extents.
  template <DType T, ShapeType S> dims_t<std::size_t(S::rank)> check(const std::string& key) const {
    const TensorInfo& i = info(key);
    if (i.dtype != safetensors_dtype<T>())
      detail::fail(name_, key, "dtype is " + i.dtype + ", not " + safetensors_dtype<T>() + " (" + dtype_name<T>() + ")");
    dims_t<std::size_t(S::rank)> d{};
    bool ok = i.shape.size() == std::size_t(S::rank);
    for (std::size_t k = 0; ok && k < d.size(); ++k) {
      d[k] = std::size_t(i.shape[k]);
      ok = S::extents[k] == dyn || S::extents[k] == d[k];
    }
    if (!ok)
      throw shape_error(std::string(detail::what) + ": " + name_ + ": tensor '" + key + "': shape " + format_dims(i.shape) +
                        " does not fit " + format_dims(S::extents));
    return d;
  }

  /// @brief A copy of tensor key as Tensor<T, S>; dtype and static extents must match.
  template <DType T, ShapeType S> Tensor<T, S> get(const std::string& key) const {
    Tensor<T, S> t(check<T, S>(key));
    read_into(key, t.data());
    return t;
  }
  /// @brief Copies tensor key into t (its dtype and extents must match exactly).
  template <class T, class S> void read(const std::string& key, Tensor<T, S>& t) const {
    const auto d = check<T, S>(key);
    if (d != t.dims())
      throw shape_error(std::string(detail::what) + ": " + name_ + ": tensor '" + key + "': shape " + format_dims(info(key).shape) +
                        " differs from the destination's " + format_dims(t.dims()));
    read_into(key, t.data());
  }
  /// @brief A read-only view into the mapped file (no copy; valid while the File lives).
  template <DType T, ShapeType S> TensorView<const T, S> view(const std::string& key) const {
    static_assert(!std::is_same_v<T, bool>, "ctflow::io::safetensors: bool tensors are read with get (bytes other than 0 and 1 are normalised)");
    const auto d = check<T, S>(key);
    const auto b = bytes(key);
    if (reinterpret_cast<std::uintptr_t>(b.data()) % alignof(T) != 0)
      detail::fail(name_, key, "data is not aligned to its " + std::to_string(alignof(T)) + "-byte elements; use get");
    return TensorView<const T, S>(reinterpret_cast<const T*>(b.data()), d);
  }

  /// @brief Copies the bytes of tensor key to dst (bool bytes are normalised to 0 or 1).
  void read_into(const std::string& key, void* dst) const;

 private:
  void init(std::span<const std::uint8_t> bytes);

  ctflow::detail::mapped_file map_;
  std::string name_;
  std::span<const std::uint8_t> bytes_;
  std::uint64_t data_ = 0;
  std::map<std::string, TensorInfo> index_;
  std::map<std::string, std::string> metadata_;
};

/// @brief safetensors' `safe_open`: maps and validates the file.
inline File safe_open(const std::string& path) { return File(path); }

/// @brief The bytes of the header of a file holding `tensors` (padded so the data starts at a
/// multiple of 64 bytes), with the order the data follows: largest dtype first, then by name, so
/// every tensor stays aligned to its element size.
CTFLOW_DECL std::string make_header(const std::vector<std::pair<std::string, tensor_ref>>& tensors,
                                    const std::map<std::string, std::string>& metadata, std::vector<std::size_t>& order);

/// @brief safetensors' `save_file`: writes the named tensors (and string metadata) atomically:
/// the file appears complete and fsync'ed, or not at all.
CTFLOW_DECL void save_file(const std::vector<std::pair<std::string, tensor_ref>>& tensors, const std::string& path,
                           const std::map<std::string, std::string>& metadata = {});

}  // namespace safetensors
}  // namespace ctflow::io

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/io/impl/safetensors.ipp>
#endif
