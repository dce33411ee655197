#pragma once
// Keras's names of classes in snake case, shared by layers (their automatic names) and the
// weight files (their keys).

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ctflow::keras::detail {

/// Keras's to_snake_case ("MaxPooling2D" -> "max_pooling2d") into out (room for twice the
/// name's size); returns its length. Usable at compile time, for messages.
constexpr std::size_t snake_case_into(std::string_view name, char* out) {
  const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  // (.)([A-Z][a-z]+) -> \1_\2, then ([a-z])([A-Z]) -> \1_\2, then lower case
  char s[128]{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < name.size() && n + 2 < sizeof s; ++i) {
    if (i > 0 && upper(name[i]) && i + 1 < name.size() && lower(name[i + 1])) s[n++] = '_';
    s[n++] = name[i];
  }
  std::size_t m = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && lower(s[i - 1]) && upper(s[i])) out[m++] = '_';
    out[m++] = upper(s[i]) ? char(s[i] - 'A' + 'a') : s[i];
  }
  return m;
}
inline std::string snake_case(std::string_view name) {
  std::string out(2 * name.size() + 2, '\0');
  out.resize(snake_case_into(name, out.data()));
  return out;
}
/// The keys of Keras 3's weight files for a model's layers, in order: each layer's class in snake
/// case, then _1, _2, ... for the later layers of the same class ("dense", "dense_1"). They depend
/// on the model's structure only, not on the layers' names. class_of(layer) gives a layer's class.
template <class Layers, class ClassOf> std::vector<std::string> layer_keys(const Layers& layers, ClassOf class_of) {
  std::map<std::string, int> used;
  std::vector<std::string> keys;
  for (const auto& l : layers) {
    const std::string base = snake_case(class_of(l));
    auto [it, fresh] = used.emplace(base, 0);
    keys.push_back(fresh ? base : base + "_" + std::to_string(++it->second));
  }
  return keys;
}

}  // namespace ctflow::keras::detail
