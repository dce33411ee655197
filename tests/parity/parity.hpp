#pragma once
// Parity with PyTorch and TensorFlow.js on committed reference data (tests/parity/generate.py and
// generate_tfjs.js write it): the reference cases by name, and the comparison of a result with
// one. The parity tests are split over a few translation units so that they build in parallel.
#include <catch2/catch.hpp>

#include <ctflow/ctflow.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace parity {

struct reference {
  std::vector<double> x, y;
};

inline const std::map<std::string, reference>& cases() {
  static const std::map<std::string, reference> all = [] {
    std::map<std::string, reference> m;
    std::ifstream torch(std::string(CTFLOW_PARITY_DIR) + "/reference.txt"), tfjs(std::string(CTFLOW_PARITY_DIR) + "/tfjs_reference.txt");
    std::string line;
    for (auto* in : {&torch, &tfjs}) {
      while (std::getline(*in, line)) {
        std::istringstream ls(line);
        std::string name, tok;
        ls >> name >> tok;
        reference r;
        std::vector<double>* into = &r.x;
        while (ls >> tok) {
          if (tok == "y") { into = &r.y; continue; }
          into->push_back(std::stod(tok));
        }
        m[name] = r;
      }
    }
    return m;
  }();
  return all;
}

inline const reference& get(const std::string& name) {
  const auto it = cases().find(name);
  REQUIRE(it != cases().end());
  return it->second;
}

inline ctflow::Tensor<double, ctflow::Shape<ctflow::dyn>> vec(const std::vector<double>& v) {
  using namespace ctflow;
  Tensor<double, Shape<dyn>> t({v.size()});
  std::copy(v.begin(), v.end(), t.begin());
  return t;
}

template <class T> void compare(const T& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) REQUIRE(double(got.data()[i]) == Approx(want[i]).epsilon(tol).margin(tol));
}

}  // namespace parity
