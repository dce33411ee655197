#pragma once
/// @file
/// @brief keras's get_config: a layer's, optimizer's or loss's arguments as the JSON object Keras 3
/// writes in a `.keras` archive's config.json, and from which Keras rebuilds the object. A layer
/// spec writes its own arguments (`name`, `trainable` and `dtype` are the model's to write):
///
///     void get_config(config_dict& c) const { c.set("units", Units).set("activation", activation.name); }
///
/// A user's layer may define get_config the same way; Keras then loads it as the class registered
/// as "Custom>ClassName" (`keras.saving.register_keras_serializable()`).

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#include <ctflow/core/errors.hpp>
#include <ctflow/keras/initializers.hpp>
#include <ctflow/keras/regularizers.hpp>

namespace ctflow::keras {

/// @brief The members of a JSON object, written in order: Keras's config dict.
class config_dict {
 public:
  /// @brief key: true or false.
  config_dict& set(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  /// @brief key: an integer.
  template <std::integral I> requires(!std::same_as<I, bool>) config_dict& set(std::string_view key, I v) { return raw(key, std::to_string(v)); }
  /// @brief key: a number (the shortest text that reads back as v; NaN and infinities as Python's
  /// json writes them).
  config_dict& set(std::string_view key, double v) { return raw(key, number(v)); }
  /// @brief key: a string.
  config_dict& set(std::string_view key, std::string_view v) { return raw(key, quote(v)); }
  config_dict& set(std::string_view key, const char* v) { return set(key, std::string_view(v)); }
  config_dict& set(std::string_view key, const std::string& v) { return set(key, std::string_view(v)); }
  /// @brief key: null (Python's None).
  config_dict& set(std::string_view key, std::nullptr_t) { return raw(key, "null"); }
  /// @brief key: the value, or null.
  template <class V> config_dict& set(std::string_view key, const std::optional<V>& v) { return v ? set(key, *v) : set(key, nullptr); }
  /// @brief key: a list of integers (a kernel size, strides, a shape).
  config_dict& set(std::string_view key, std::initializer_list<std::size_t> v) { return set(key, std::span<const std::size_t>(v.begin(), v.size())); }
  config_dict& set(std::string_view key, std::span<const std::size_t> v) {
    std::string t = "[";
    for (std::size_t i = 0; i < v.size(); ++i) t += (i ? ", " : "") + std::to_string(v[i]);
    return raw(key, t + "]");
  }
  /// @brief key: a list of numbers.
  template <class V> requires std::is_arithmetic_v<V> config_dict& set(std::string_view key, const std::vector<V>& v) {
    std::string t = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) t += ", ";
      if constexpr (std::is_integral_v<V>) t += std::to_string(v[i]);
      else t += number(double(v[i]));
    }
    return raw(key, t + "]");
  }
  /// @brief key: a nested object.
  config_dict& set(std::string_view key, const config_dict& nested) { return raw(key, nested.json()); }
  /// @brief key: an initializer, serialized as Keras serializes it.
  config_dict& set(std::string_view key, const initializers::Initializer& init) {
    config_dict c;
    const std::string_view cls = init.class_name;
    const auto seed = std::int64_t(init.seed & 0x7fffffff);  // Keras's seeds are Python ints a backend takes as int32
    using kind = initializers::Initializer::kind;
    switch (init.type) {
      case kind::zeros:
      case kind::ones: break;
      case kind::constant: c.set("value", init.a); break;
      case kind::random_uniform: c.set("minval", init.a).set("maxval", init.b).set("seed", seed); break;
      case kind::random_normal:
      case kind::truncated_normal: c.set("mean", init.a).set("stddev", init.b).set("seed", seed); break;
      case kind::orthogonal: c.set("gain", init.b).set("seed", seed); break;
      case kind::variance_scaling:
        if (cls == "VarianceScaling") c.set("scale", init.a).set("mode", init.mode).set("distribution", init.distribution);
        c.set("seed", seed);
        break;
    }
    return set(key, object("keras.initializers", cls, c));
  }
  /// @brief key: a regularizer, or null when it penalises nothing.
  config_dict& set(std::string_view key, const regularizers::Regularizer& r) {
    if (!r.active()) return set(key, nullptr);
    config_dict c;
    const std::string_view cls = *r.class_name ? r.class_name : "L1L2";
    if (cls != "L2") c.set("l1", r.l1);
    if (cls != "L1") c.set("l2", r.l2);
    return set(key, object("keras.regularizers", cls, c));
  }
  /// @brief key: JSON text, as it is.
  config_dict& raw(std::string_view key, std::string_view json) {
    if (!members_.empty()) members_ += ", ";
    members_ += quote(key);
    members_ += ": ";
    members_ += json;
    return *this;
  }
  /// @brief The object's JSON text.
  std::string json() const { return "{" + members_ + "}"; }
  /// @brief Whether it has no member.
  bool empty() const { return members_.empty(); }

  /// @brief Keras's serialized object: {"module", "class_name", "config", "registered_name"}.
  static config_dict object(std::string_view module, std::string_view class_name, const config_dict& config) {
    config_dict o;
    o.set("module", module).set("class_name", class_name).set("config", config).set("registered_name", nullptr);
    return o;
  }
  /// @brief s as a JSON string.
  static std::string quote(std::string_view s) {
    std::string t = "\"";
    for (const char ch : s) {
      const auto u = static_cast<unsigned char>(ch);
      if (ch == '"' || ch == '\\') (t += '\\') += ch;
      else if (u < 0x20) {
        static constexpr char hex[] = "0123456789abcdef";
        t += "\\u00";
        t += hex[u >> 4];
        t += hex[u & 15];
      } else t += ch;
    }
    return t + "\"";
  }
  /// @brief v as JSON text (Python's json: NaN, Infinity, -Infinity).
  static std::string number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    std::string t(buf, r.ptr);
    if (t.find_first_of(".eE") == std::string::npos) t += ".0";
    return t;
  }

 private:
  std::string members_;
};

namespace detail {
/// The members of the JSON object `json` as (key, the value's JSON text), or a list's elements
/// with keys "0", "1", ...: a scan of its top level (each value is read when asked for, and a
/// nested one by another scan), so that configs need no JSON library here. Text of another form
/// is an io_error naming `what` and the offset.
inline std::vector<std::pair<std::string, std::string>> json_members(std::string_view json, const std::string& what) {
  std::size_t i = 0;
  const auto fail = [&](const char* why) { throw io_error("ctflow::keras: " + what + ": " + why + " at offset " + std::to_string(i) + " of its JSON"); };
  const auto space = [&] {
    while (i < json.size() && (json[i] == ' ' || json[i] == '\n' || json[i] == '\t' || json[i] == '\r')) ++i;
  };
  const auto skip_string = [&] {  // at its opening quote
    for (++i; i < json.size(); ++i) {
      if (json[i] == '\\') ++i;
      else if (json[i] == '"') {
        ++i;
        return;
      }
    }
    fail("an unterminated string");
  };
  const auto value = [&] {  // the text of the value at i
    space();
    const std::size_t start = i;
    if (i >= json.size()) fail("a missing value");
    if (json[i] == '"') skip_string();
    else if (json[i] == '{' || json[i] == '[') {
      std::string open;  // the brackets still open, innermost last
      do {
        if (i >= json.size()) fail("an unclosed object or list");
        const char c = json[i];
        if (c == '"') {
          skip_string();
          continue;
        }
        if (c == '{' || c == '[') open += c;
        else if (c == '}' || c == ']') {
          if (open.empty() || open.back() != (c == '}' ? '{' : '[')) fail("a mismatched bracket");
          open.pop_back();
        }
        ++i;
      } while (!open.empty());
    } else {
      while (i < json.size() && json[i] != ',' && json[i] != '}' && json[i] != ']' && json[i] != ' ' && json[i] != '\n') ++i;
      if (i == start) fail("an unexpected character");
    }
    return std::string(json.substr(start, i - start));
  };
  std::vector<std::pair<std::string, std::string>> out;
  space();
  if (i >= json.size() || (json[i] != '{' && json[i] != '[')) fail("not a JSON object or list");
  const bool object = json[i] == '{';
  const char close = object ? '}' : ']';
  ++i;
  space();
  if (i < json.size() && json[i] == close) ++i;
  else
    for (;;) {
      std::string key = std::to_string(out.size());
      if (object) {
        space();
        if (i >= json.size() || json[i] != '"') fail("a member without a quoted name");
        const std::size_t start = i;
        skip_string();
        key = std::string(json.substr(start + 1, i - start - 2));
        space();
        if (i >= json.size() || json[i] != ':') fail("a member without ':'");
        ++i;
      }
      std::string v = value();
      out.emplace_back(std::move(key), std::move(v));
      space();
      if (i < json.size() && json[i] == ',') {
        ++i;
        continue;
      }
      if (i < json.size() && json[i] == close) {
        ++i;
        break;
      }
      fail("a member not followed by ',' or the end");
    }
  space();
  if (i != json.size()) fail("text after the end");
  return out;
}
}  // namespace detail

/// @brief A config read back (Keras's from_config): each member's JSON text by key. `get` leaves
/// a value as it is when the key is absent or null (Keras's default then), and a value of
/// another kind is a value_error naming the key and the object.
class config_values {
 public:
  /// @brief The members of the JSON object `json` (a list's: keys "0", "1", ...); `what` names it
  /// in errors.
  config_values(std::string_view json, std::string what) : what_(std::move(what)), members_(detail::json_members(json, what_)) {}
  /// @brief A member's JSON text, or null when absent.
  const std::string* text(std::string_view key) const {
    for (const auto& [k, v] : members_)
      if (k == key) return &v;
    return nullptr;
  }
  /// @brief Whether key is present and not null.
  bool has(std::string_view key) const {
    const auto* t = text(key);
    return t && *t != "null";
  }
  /// @brief Reads key into v (a number, integer, bool, string or an optional of one).
  template <class V> const config_values& get(std::string_view key, V& v) const {
    const auto* t = text(key);
    if (!t || *t == "null") {
      if constexpr (requires { v.reset(); }) v.reset();
      return *this;
    }
    if constexpr (requires { v.emplace(); }) {
      typename V::value_type inner{};
      get(key, inner);
      v = inner;
    } else if constexpr (requires { v.push_back({}); } && !std::is_same_v<V, std::string>) {
      if (t->empty() || t->front() != '[') bad(key, "a list", *t);
      const config_values items(*t, what_ + "." + std::string(key));
      V out;
      for (const auto& [k, e] : items.members_) {
        typename V::value_type x{};
        items.get(k, x);
        out.push_back(x);
      }
      v = std::move(out);
    } else if constexpr (std::is_same_v<V, bool>) {
      if (*t != "true" && *t != "false") bad(key, "true or false", *t);
      v = *t == "true";
    } else if constexpr (std::is_arithmetic_v<V>) {
      double d = 0;
      const auto r = std::from_chars(t->data(), t->data() + t->size(), d);
      if (r.ec != std::errc() || r.ptr != t->data() + t->size()) bad(key, "a number", *t);
      if constexpr (std::is_integral_v<V>)
        if (d != std::floor(d)) bad(key, "an integer", *t);
      v = V(d);
    } else {
      static_assert(std::is_same_v<V, std::string>, "ctflow::keras::config_values::get reads numbers, bools and strings");
      if (t->size() < 2 || t->front() != '"' || t->back() != '"') bad(key, "a string", *t);
      v = t->substr(1, t->size() - 2);
    }
    return *this;
  }
  /// @brief What it names in errors.
  const std::string& what() const { return what_; }

 private:
  [[noreturn]] void bad(std::string_view key, const char* want, const std::string& got) const {
    throw value_error("ctflow::keras: " + what_ + ": \"" + std::string(key) + "\" is " + got.substr(0, 64) + ", not " + want);
  }
  std::string what_;
  std::vector<std::pair<std::string, std::string>> members_;
};

namespace detail {
/// Whether a spec writes its configuration.
template <class S> concept has_get_config = requires(const S& s, config_dict& c) { s.get_config(c); };
/// The configuration a spec writes ("{}" for one that writes none).
template <class S> std::string config_json(const S& spec) {
  config_dict c;
  if constexpr (has_get_config<S>) spec.get_config(c);
  return c.json();
}
/// Writes the fields that O::each_field names.
template <class O> config_dict& write_fields(const O& o, config_dict& c) {
  O::each_field(o, [&](const char* key, const auto& v) { c.set(key, v); });
  return c;
}
/// Reads them back.
template <class O> void read_fields(O& o, const config_values& v) {
  O::each_field(o, [&](const char* key, auto& f) { v.get(key, f); });
}
}  // namespace detail

}  // namespace ctflow::keras
