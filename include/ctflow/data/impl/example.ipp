#pragma once
// Definitions of data/example.hpp (ctflow::data's compiled part; see detail/linkage.hpp).

#include <ctflow/data/example.hpp>

namespace ctflow::io {

CTFLOW_DECL std::string Example::SerializeToString() const {
  std::string out;
  ctflow::detail::pb::writer w{out};
  w.message(1, [&](auto& fs) {  // Example.features
    for (const auto& kv : features)
      fs.message(1, [&](auto& entry) {  // Features.feature: map<string, Feature>
        const Feature& f = kv.second;
        entry.bytes(1, kv.first);
        entry.message(2, [&](auto& feature) {
          feature.message(std::uint32_t(f.list), [&](auto& list) {
            switch (f.list) {
              case Feature::kind::bytes_list:
                for (const auto& b : f.bytes) list.bytes(1, b);
                break;
              case Feature::kind::float_list: list.packed_floats(1, f.floats); break;
              case Feature::kind::int64_list: list.packed_int64s(1, f.int64s); break;
            }
          });
        });
      });
  });
  return out;
}

}  // namespace ctflow::io

namespace ctflow::io::detail {

CTFLOW_DECL std::pair<int, std::string_view> feature_list(std::string_view feature) {
  ctflow::detail::pb::reader r(feature, example_what);
  std::uint32_t field;
  ctflow::detail::pb::wire w;
  std::pair<int, std::string_view> found{0, {}};
  while (r.next(field, w)) {
    if (field >= 1 && field <= 3 && w == ctflow::detail::pb::length_type) found = {int(field), r.bytes()};
    else r.skip(w);
  }
  return found;
}

CTFLOW_DECL std::string_view typed_list(std::string_view key, std::string_view feature, int want) {
  auto [kind, list] = feature_list(feature);
  if (kind != 0 && kind != want)
    example_error(key, std::string("Data types don't match. Data type: ") + kind_name(kind) + " but expected type: " + kind_name(want));
  return list;
}

}  // namespace ctflow::io::detail

namespace ctflow::io {

CTFLOW_DECL Example Example::ParseFromString(std::string_view bytes) {
  Example ex;
  detail::for_each_feature(bytes, [&](std::string_view key, std::string_view value) {
    Feature f;
    auto [kind, list] = detail::feature_list(value);
    f.list = kind == 0 ? Feature::kind::float_list : Feature::kind(kind);
    detail::for_each_value(kind, list, [&](auto v) {
      if constexpr (std::is_same_v<decltype(v), float>) f.floats.push_back(v);
      else if constexpr (std::is_same_v<decltype(v), std::int64_t>) f.int64s.push_back(v);
      else f.bytes.emplace_back(v);
    });
    ex.features[std::string(key)] = std::move(f);
  });
  return ex;
}

}  // namespace ctflow::io
