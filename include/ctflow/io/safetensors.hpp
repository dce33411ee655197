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

#include <nlohmann/json.hpp>

#include <ctflow/core/tensor.hpp>
#include <ctflow/detail/file.hpp>

namespace ctflow::io {

static_assert(std::endian::native == std::endian::little, "ctflow::io: safetensors data is little-endian; so must the host be");

/// @brief The safetensors code of a ctflow dtype ("F32", "I64", "BOOL", ...).
template <DType T> constexpr const char* safetensors_dtype() { return dtype_info<T>::safetensors; }

/// @brief Bytes per element of a safetensors dtype code; 0 for a code the format does not define.
inline std::size_t safetensors_dtype_size(std::string_view code) {
  static constexpr std::pair<std::string_view, std::size_t> table[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  for (const auto& [name, size] : table)
    if (name == code) return size;
  return 0;
}

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

[[noreturn]] inline void fail(const std::string& file, const std::string& why) {
  throw io_error(std::string(what) + ": " + file + ": " + why);
}
[[noreturn]] inline void fail(const std::string& file, const std::string& tensor, const std::string& why) {
  fail(file, "tensor '" + tensor + "': " + why);
}

/// Parses and validates the header of the bytes of a whole file; returns the data's offset.
inline std::uint64_t parse_header(std::span<const std::uint8_t> file, const std::string& name, std::map<std::string, TensorInfo>& index,
                                  std::map<std::string, std::string>& metadata) {
  if (file.size() < 8) fail(name, "file too short for a header (" + std::to_string(file.size()) + " bytes)");
  std::uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  if (n > max_header_size) fail(name, "header length " + std::to_string(n) + " exceeds the " + std::to_string(max_header_size) + "-byte limit");
  if (n > file.size() - 8)
    fail(name, "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(file.size()) + " bytes)");
  const auto* text = reinterpret_cast<const char*>(file.data() + 8);
  if (n == 0 || text[0] != '{') fail(name, "header is not a JSON object");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + n);
  } catch (const nlohmann::json::exception& e) {
    fail(name, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(name, "header is not a JSON object");
  const std::uint64_t data_size = file.size() - 8 - n;

  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(name, "__metadata__ is not an object of strings");
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) fail(name, "__metadata__ value of '" + k + "' is not a string");
        metadata[k] = v.get<std::string>();
      }
      continue;
    }
    if (!value.is_object()) fail(name, key, "entry is not an object");
    const auto dt = value.find("dtype");
    const auto sh = value.find("shape");
    const auto off = value.find("data_offsets");
    if (dt == value.end() || !dt->is_string()) fail(name, key, "missing or non-string dtype");
    if (sh == value.end() || !sh->is_array()) fail(name, key, "missing or non-array shape");
    if (off == value.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
      fail(name, key, "data_offsets must be two non-negative integers");
    TensorInfo info;
    info.dtype = dt->get<std::string>();
    const std::size_t esize = safetensors_dtype_size(info.dtype);
    if (esize == 0) fail(name, key, "unknown dtype '" + info.dtype + "'");
    if (sh->size() > std::size_t(max_rank)) fail(name, key, "rank " + std::to_string(sh->size()) + " exceeds " + std::to_string(max_rank));
    std::uint64_t bytes = esize;
    bool overflow = false;
    for (const auto& e : *sh) {
      if (!e.is_number_unsigned()) fail(name, key, "shape entries must be non-negative integers");
      const std::uint64_t d = e.get<std::uint64_t>();
      info.shape.push_back(d);
      overflow = overflow || __builtin_mul_overflow(bytes, d, &bytes);
    }
    if (overflow) fail(name, key, "shape " + format_dims(info.shape) + " of " + info.dtype + " overflows 64 bits");
    info.begin = (*off)[0].get<std::uint64_t>();
    info.end = (*off)[1].get<std::uint64_t>();
    if (info.begin > info.end) fail(name, key, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "] are reversed");
    if (info.end > data_size)
      fail(name, key, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "] run past the end of the data (" +
                          std::to_string(data_size) + " bytes)");
    if (info.end - info.begin != bytes)
      fail(name, key, "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "] hold " +
                          std::to_string(info.end - info.begin) + " bytes but shape " + format_dims(info.shape) + " of " + info.dtype +
                          " needs " + std::to_string(bytes));
    index.emplace(key, std::move(info));
  }

  // The tensors tile the data exactly: no overlap, no gap, nothing after the last.
  std::vector<std::pair<const std::string*, const TensorInfo*>> order;
  for (const auto& [k, info] : index) order.emplace_back(&k, &info);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return std::pair(a.second->begin, a.second->end) < std::pair(b.second->begin, b.second->end);
  });
  std::uint64_t expected = 0;
  const std::string* previous = nullptr;
  for (const auto& [k, info] : order) {
    if (info->begin < expected) fail(name, *k, "data overlaps tensor '" + *previous + "'");
    if (info->begin > expected) fail(name, *k, std::to_string(info->begin - expected) + " unclaimed bytes before its data");
    expected = info->end;
    previous = k;
  }
  if (expected != data_size) fail(name, std::to_string(data_size - expected) + " unclaimed bytes after the last tensor");
  return 8 + n;
}

}  // namespace detail

/// @brief A safetensors file opened for reading (safetensors' `safe_open`): the file is mapped,
/// its header validated; tensors are read on demand.
class File {
 public:
  /// @brief Maps and validates the file at path.
  explicit File(const std::string& path) : map_(path, detail::what), name_(path) { init(map_.bytes()); }
  /// @brief Validates bytes held by the caller (they must outlive the File).
  File(std::span<const std::uint8_t> bytes, std::string name) : name_(std::move(name)) { init(bytes); }

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
  void read_into(const std::string& key, void* dst) const {
    const auto b = bytes(key);
    if (b.empty()) return;
    if (info(key).dtype == "BOOL") {
      auto* out = static_cast<std::uint8_t*>(dst);
      for (std::size_t i = 0; i < b.size(); ++i) out[i] = b[i] != 0;
    } else {
      std::memcpy(dst, b.data(), b.size());
    }
  }

 private:
  void init(std::span<const std::uint8_t> bytes) {
    bytes_ = bytes;
    data_ = detail::parse_header(bytes_, name_, index_, metadata_);
  }

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
inline std::string make_header(const std::vector<std::pair<std::string, tensor_ref>>& tensors,
                               const std::map<std::string, std::string>& metadata, std::vector<std::size_t>& order) {
  order.resize(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t sa = safetensors_dtype_size(tensors[a].second.dtype), sb = safetensors_dtype_size(tensors[b].second.dtype);
    return sa != sb ? sa > sb : tensors[a].first < tensors[b].first;
  });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t at = 0;
  for (std::size_t i : order) {
    const auto& [name, t] = tensors[i];
    if (name.empty() || name == "__metadata__") throw value_error(std::string(detail::what) + ": invalid tensor name '" + name + "'");
    if (header.contains(name)) throw value_error(std::string(detail::what) + ": tensor name '" + name + "' given twice");
    header[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {at, at + t.nbytes}}};
    at += t.nbytes;
  }
  std::string text = header.dump();
  text.resize((text.size() + 8 + 63) / 64 * 64 - 8, ' ');
  return text;
}

/// @brief safetensors' `save_file`: writes the named tensors (and string metadata) atomically:
/// the file appears complete and fsync'ed, or not at all.
inline void save_file(const std::vector<std::pair<std::string, tensor_ref>>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {}) {
  std::vector<std::size_t> order;
  const std::string header = make_header(tensors, metadata, order);
  ctflow::detail::atomic_output out(path, ctflow::detail::compression::none, detail::what);
  const std::uint64_t n = header.size();
  out.write(&n, 8);
  out.write(header.data(), header.size());
  for (std::size_t i : order) out.write(tensors[i].second.data, std::size_t(tensors[i].second.nbytes));
  out.commit();
}

}  // namespace safetensors
}  // namespace ctflow::io
