#pragma once
// Definitions of io/safetensors.hpp (ctflow::io's compiled part; see detail/linkage.hpp).

#include <nlohmann/json.hpp>

#include <ctflow/io/safetensors.hpp>

namespace ctflow::io {

CTFLOW_DECL std::size_t safetensors_dtype_size(std::string_view code) {
  static constexpr std::pair<std::string_view, std::size_t> table[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  for (const auto& [name, size] : table)
    if (name == code) return size;
  return 0;
}

}  // namespace ctflow::io

namespace ctflow::io::safetensors::detail {

CTFLOW_DECL void fail(const std::string& file, const std::string& why) {
  throw io_error(std::string(what) + ": " + file + ": " + why);
}
CTFLOW_DECL void fail(const std::string& file, const std::string& tensor, const std::string& why) {
  fail(file, "tensor '" + tensor + "': " + why);
}

/// Parses and validates the header of the bytes of a whole file; returns the data's offset.
CTFLOW_DECL std::uint64_t parse_header(std::span<const std::uint8_t> file, const std::string& name, std::map<std::string, TensorInfo>& index,
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

}  // namespace ctflow::io::safetensors::detail

namespace ctflow::io::safetensors {

CTFLOW_DECL File::File(const std::string& path) : map_(path, detail::what), name_(path) { init(map_.bytes()); }

CTFLOW_DECL File::File(std::span<const std::uint8_t> bytes, std::string name) : name_(std::move(name)) { init(bytes); }

CTFLOW_DECL void File::read_into(const std::string& key, void* dst) const {
    const auto b = bytes(key);
    if (b.empty()) return;
    if (info(key).dtype == "BOOL") {
      auto* out = static_cast<std::uint8_t*>(dst);
      for (std::size_t i = 0; i < b.size(); ++i) out[i] = b[i] != 0;
    } else {
      std::memcpy(dst, b.data(), b.size());
    }
  }


CTFLOW_DECL void File::init(std::span<const std::uint8_t> bytes) {
    bytes_ = bytes;
    data_ = detail::parse_header(bytes_, name_, index_, metadata_);
  }

}  // namespace ctflow::io::safetensors

namespace ctflow::io::safetensors {

CTFLOW_DECL std::string make_header(const std::vector<std::pair<std::string, tensor_ref>>& tensors,
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

CTFLOW_DECL void save_file(const std::vector<std::pair<std::string, tensor_ref>>& tensors, const std::string& path,
                           const std::map<std::string, std::string>& metadata) {
  std::vector<std::size_t> order;
  const std::string header = make_header(tensors, metadata, order);
  ctflow::detail::atomic_output out(path, ctflow::detail::compression::none, detail::what);
  const std::uint64_t n = header.size();
  out.write(&n, 8);
  out.write(header.data(), header.size());
  for (std::size_t i : order) out.write(tensors[i].second.data, std::size_t(tensors[i].second.nbytes));
  out.commit();
}

}  // namespace ctflow::io::safetensors
