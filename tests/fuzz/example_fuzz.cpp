// tf.train.Example wire format: parse with a spec of every feature kind, and the generic parse.
#include <ctflow/data/example.hpp>

#include "fuzz_common.hpp"

CTFLOW_FUZZ({
  using namespace ctflow;
  auto ex = io::Example::ParseFromString(bytes);
  if (io::Example::ParseFromString(ex.SerializeToString()).features.size() != ex.features.size()) __builtin_trap();
  io::parse_single_example(bytes, io::FixedLenFeature<float, Shape<2, 3>>("image", 0.f), io::FixedLenFeature<std::int64_t>("label", 0),
                           io::FixedLenFeature<std::string>("name", std::string()), io::VarLenFeature<float>("var"),
                           io::VarLenFeature<std::int64_t>("ids"), io::VarLenFeature<std::string>("tags"));
})
