// Watching training: TensorBoard event files decoded by an independent reader (python3-protobuf
// with TensorFlow's schema) with every value checked; profiler traces parsed and checked;
// tf.print formatting; check_numerics naming the op and the index.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <ctflow/ctflow.hpp>
#include <ctflow/data/image.hpp>
#include <ctflow/io.hpp>

#include "../test_files.hpp"

using namespace ctflow;
using nlohmann::json;

namespace {

using test_files::slurp;
std::string temp_dir() { return test_files::temp_dir("ctflow_summary"); }
/// The events of an event file as the independent reader decodes them (one JSON object each).
std::vector<json> decode(const std::string& path) {
  const std::string out = path + ".json";
  const std::string cmd = std::string(CTFLOW_PYTHON) + " " + CTFLOW_SUMMARY_PROTO + " dump " + path + " > " + out;
  if (std::system(cmd.c_str()) != 0) return {};
  std::vector<json> events;
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) events.push_back(json::parse(line));
  return events;
}
std::string unhex(const std::string& h) {
  std::string b;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) b += char(std::stoi(h.substr(i, 2), nullptr, 16));
  return b;
}

}  // namespace

TEST_CASE("Event files: scalars, histograms, images and text as TensorFlow 2 writes them, read back independently") {
  const std::string dir = temp_dir() + "/logs/train";
  Tensor<float, Shape<2, 5>> w;
  for (int i = 0; i < 10; ++i) w.data()[i] = float(i * i) * 0.5f;  // 0 .. 40.5
  Tensor<float, Shape<2, 2, 3, 1>> gray;                          // two 2x3 gray images in [0, 1]
  for (int i = 0; i < 12; ++i) gray.data()[i] = float(i) / 11.0f;
  gray.data()[0] = -1.0f;  // saturates to 0
  gray.data()[1] = 2.0f;   // saturates to 255
  std::string path;
  {
    auto writer = summary::create_file_writer(dir);
    path = writer.path();
    CHECK(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
    CHECK(path.size() > 3);
    CHECK(path.substr(path.size() - 3) == ".v2");
    CHECK_FALSE(summary::scalar("ignored", 1.0, 0));  // no default writer yet
    {
      auto scope = writer.as_default();
      for (int step = 0; step < 3; ++step) CHECK(summary::scalar("loss", 2.5 - step, step));
      summary::experimental::set_step(7);
      CHECK(summary::histogram("weights", w));
      CHECK(summary::histogram("constant", Tensor<float, Shape<4>>() + 3.0f, 8, 5));
      CHECK(summary::image("digits", gray, 9, 1));
      CHECK(summary::text("note", "**epoch** 1 done", 10));
      summary::experimental::set_step(std::nullopt);
      CHECK_THROWS_AS(summary::scalar("no_step", 1.0), value_error);
    }
    writer.scalar("accuracy", Tensor<float, Shape<>>() + 0.875f, 11, "fraction correct");
  }  // closed: flushed and fsync'ed

  const auto events = decode(path);
  REQUIRE(events.size() == 9);
  CHECK(events[0]["file_version"] == "brain.Event:2");
  CHECK(events[0]["wall_time"].get<double>() > 1.6e9);
  for (int step = 0; step < 3; ++step) {
    const auto& e = events[std::size_t(1 + step)];
    CHECK(e["tag"] == "loss");
    CHECK(e["step"] == step);
    CHECK(e["plugin"] == "scalars");
    CHECK(e["data_class"] == "DATA_CLASS_SCALAR");
    CHECK(e["dtype"] == "DT_FLOAT");
    CHECK(e["shape"] == json::array());
    CHECK(e["values"] == json::array({2.5 - step}));
  }
  {
    // TensorBoard's buckets: 30 of width 40.5 / 30 from 0; the maximum goes in the last.
    const auto& h = events[4];
    CHECK(h["tag"] == "weights");
    CHECK(h["step"] == 7);
    CHECK(h["plugin"] == "histograms");
    CHECK(h["data_class"] == "DATA_CLASS_TENSOR");
    CHECK(h["dtype"] == "DT_DOUBLE");
    CHECK(h["shape"] == json::array({30, 3}));
    const auto v = h["values"].get<std::vector<double>>();
    REQUIRE(v.size() == 90);
    std::vector<double> counts(30, 0);
    for (int i = 0; i < 10; ++i) counts[std::min<std::size_t>(29, std::size_t(std::floor((double(i * i) * 0.5) / (40.5 / 30))))] += 1;
    double total = 0;
    for (std::size_t b = 0; b < 30; ++b) {
      CHECK(v[3 * b] == Approx(40.5 * double(b) / 30));
      CHECK(v[3 * b + 1] == Approx(40.5 * double(b + 1) / 30));
      CHECK(v[3 * b + 2] == counts[b]);
      total += v[3 * b + 2];
    }
    CHECK(total == 10);
    CHECK(v[89] == 1);     // 40.5 alone in the last bucket
    CHECK(v[88] == 40.5);  // whose right edge is exactly the maximum
  }
  {
    // All values equal: every edge is the value and the last bucket holds them all.
    const auto v = events[5]["values"].get<std::vector<double>>();
    CHECK(events[5]["shape"] == json::array({5, 3}));
    CHECK(v == std::vector<double>{3, 3, 0, 3, 3, 0, 3, 3, 0, 3, 3, 0, 3, 3, 4});
  }
  {
    const auto& im = events[6];
    CHECK(im["plugin"] == "images");
    CHECK(im["data_class"] == "DATA_CLASS_BLOB_SEQUENCE");
    CHECK(im["dtype"] == "DT_STRING");
    CHECK(im["shape"] == json::array({3}));  // width, height, then max_outputs = 1 PNG
    CHECK(unhex(im["values"][0]) == "3");
    CHECK(unhex(im["values"][1]) == "2");
    const auto png = io::decode_png(unhex(im["values"][2]));
    REQUIRE(png.dims() == dims_t<3>{2, 3, 1});
    CHECK(png.data()[0] == 0);
    CHECK(png.data()[1] == 255);
    for (int i = 2; i < 6; ++i) CHECK(png.data()[i] == std::uint8_t(float(i) / 11.0f * 255.5f));
  }
  CHECK(events[7]["plugin"] == "text");
  CHECK(events[7]["shape"] == json::array());
  CHECK(unhex(events[7]["values"][0]) == "**epoch** 1 done");
  CHECK(events[8]["tag"] == "accuracy");
  CHECK(events[8]["description"] == "fraction correct");
  CHECK(events[8]["values"] == json::array({0.875}));

  // The reader can fail: a file with one flipped byte is refused.
  std::string bytes = slurp(path);
  bytes[bytes.size() / 2] ^= 0x20;
  std::ofstream(path + ".bad", std::ios::binary) << bytes;
  CHECK(std::system((std::string(CTFLOW_PYTHON) + " " + CTFLOW_SUMMARY_PROTO + " dump " + path + ".bad > /dev/null 2>&1").c_str()) != 0);
}

TEST_CASE("Event files grow by whole events: queued events reach the file on max_queue and flush") {
  const std::string dir = temp_dir();
  auto writer = summary::create_file_writer(dir, 3);
  const auto size = [&] { return std::filesystem::file_size(writer.path()); };
  const auto first = size();  // the version event is written at once
  CHECK(first > 0);
  writer.scalar("a", 1, 1);
  writer.scalar("a", 2, 2);
  CHECK(size() == first);     // queued
  writer.scalar("a", 3, 3);   // the third fills the queue
  CHECK(size() > first);
  const auto three = size();
  writer.text("t", "x", 4);
  writer.flush();
  CHECK(size() > three);
  CHECK(decode(writer.path()).size() == 5);
  // Two writers in one directory get two files.
  auto other = summary::create_file_writer(dir);
  CHECK(other.path() != writer.path());
  writer.close();
  CHECK_THROWS_AS(writer.scalar("late", 1, 5), value_error);
  CHECK_THROWS_AS(summary::create_file_writer("/proc/no_such_dir/logs"), io_error);
}

TEST_CASE("The profiler records every node with its shapes and bytes and writes Chrome trace JSON") {
  const std::string dir = temp_dir();
  Tensor<float, Shape<4, 5>> a = Tensor<float, Shape<4, 5>>() + 1.0f;
  Tensor<float, Shape<5, 6>> b = Tensor<float, Shape<5, 6>>() + 2.0f;
  Tensor<float, Shape<4, 6>> c;
  profiler::start(dir);
  CHECK_THROWS_AS(profiler::start(dir), value_error);
  for (int step = 0; step < 2; ++step) {
    profiler::Trace t("train", step);
    c = sigmoid(matmul(a, b) * 0.5f + 1.0f);
    Tensor<float, Shape<4>> s = reduce_sum<1>(c);
    CHECK(s(0) > 0);
  }
  const auto r = profiler::stop();
  CHECK_THROWS_AS(profiler::stop(), value_error);
  c = exp(c);  // not recorded
  CHECK(r.trace_file.find(dir + "/plugins/profile/") == 0);

  const json trace = json::parse(slurp(r.trace_file));
  std::map<std::string, int> calls;
  int steps = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    CHECK(e["dur"].get<double>() >= 0);
    CHECK(e["ts"].get<double>() >= 0);
    if (e["cat"] == "trace") {
      CHECK(e["name"] == "train");
      CHECK(e["args"]["step_num"] == std::to_string(steps++));
      continue;
    }
    ++calls[e["name"]];
    CHECK(e["args"]["device"] == "CPU:0");
    if (e["name"] == "matmul") {
      CHECK(e["args"]["shapes"] == "[4,5] x [5,6] -> [4,6]");
      CHECK(e["args"]["bytes"] == (20 + 30 + 24) * 4);
    } else if (e["name"] == "fused[sigmoid,add,multiply]") {
      CHECK(e["args"]["shapes"] == "[4,6] -> [4,6]");
      CHECK(e["args"]["bytes"] == 2 * 24 * 4);
    } else if (e["name"] == "reduce") {
      CHECK(e["args"]["shapes"] == "[4,6] -> [4]");
    }
  }
  CHECK(steps == 2);
  CHECK(calls["matmul"] == 2);
  CHECK(calls["fused[sigmoid,add,multiply]"] == 2);
  CHECK(calls["reduce"] == 2);
  CHECK(calls.count("exp") == 0);
  const auto stats = r.op_stats();
  CHECK(stats.size() == 3);
  const std::string table = r.summary(2);
  CHECK_THAT(table, Catch::Contains("calls") && Catch::Contains("(1 more ops)"));
}

TEST_CASE("print formats like tf.print: summarized edges, shortest floats, separators") {
  std::ostringstream os;
  const print_options to_os{.output_stream = &os};
  Tensor<std::int32_t, Shape<10>> r;
  for (int i = 0; i < 10; ++i) r(i) = i;
  print(r, to_os);
  CHECK(os.str() == "[0 1 2 ... 7 8 9]\n");
  os.str("");
  print("loss:", 0.1f, "and", Tensor<float, Shape<2, 2>>() + 1.5f, to_os);
  CHECK(os.str() == "loss: 0.1 and [[1.5 1.5]\n [1.5 1.5]]\n");
  os.str("");
  Tensor<float, Shape<7, 2>> m;
  for (int i = 0; i < 14; ++i) m.data()[i] = float(i);
  print(m, print_options{.output_stream = &os, .summarize = 2});
  CHECK(os.str() == "[[0 1]\n [2 3]\n ...\n [10 11]\n [12 13]]\n");
  os.str("");
  print(r, print_options{.output_stream = &os, .sep = ",", .end = "!", .summarize = -1}, "x", true);
  CHECK(os.str() == "[0 1 2 3 4 5 6 7 8 9],x,True!");
  os.str("");
  Tensor<bool, Shape<2>> flags;
  flags(1) = true;
  print(flags, Tensor<double, Shape<>>() + 0.1, to_os);
  CHECK(os.str() == "[False True] 0.1\n");
}

TEST_CASE("check_numerics names the op and the first NaN or infinity; the global switch checks every op") {
  Tensor<float, Shape<2, 3>> x;
  for (int i = 0; i < 6; ++i) x.data()[i] = float(i) - 1.0f;  // -1 0 1 2 3 4
  const auto ok = debugging::check_numerics(exp(x), "exp of x");
  CHECK(ok(0, 0) == Approx(std::exp(-1.0f)));
  CHECK_THROWS_AS(debugging::check_numerics(log(x), "log of x"), numerics_error);
  CHECK_THROWS_WITH(debugging::check_numerics(log(x), "log of x"),
                    "ctflow::debugging::check_numerics: log of x (op log): NaN at index [0,0] of its [2,3] result");
  CHECK_THROWS_WITH(debugging::check_numerics(x / (x * 0.0f), "ratio"),
                    "ctflow::debugging::check_numerics: ratio (op fused[divide,multiply]): Inf at index [0,0] of its [2,3] result");

  debugging::enable_check_numerics();
  Tensor<float, Shape<2, 3>> y;
  y = x * 2.0f;  // finite: fine
  CHECK_THROWS_WITH(y = log(x) + 1.0f, "ctflow::debugging::check_numerics: op fused[add,log]: NaN at index [0,0] of its [2,3] result");
  Tensor<float, Shape<3, 2>> big;
  big(2, 1) = 1e30f;
  CHECK_THROWS_WITH((Tensor<float, Shape<2, 2>>(matmul(x, big * big))), Catch::Contains("Inf at index [0,1]"));
  debugging::disable_check_numerics();
  y = log(x);  // unchecked again
  CHECK(std::isnan(y(0, 0)));
}

TEST_CASE("check_numerics stops assign_together where assignments in order would stop") {
  Tensor<float, Shape<2, 3>> x, p, q;
  for (int i = 0; i < 6; ++i) x.data()[i] = float(i) - 1.0f;  // -1 0 1 2 3 4
  debugging::enable_check_numerics();
  CHECK_THROWS_WITH(assign_together(std::tie(p, q), log(x), x * 2.0f), "ctflow::debugging::check_numerics: op log: NaN at index [0,0] of its [2,3] result");
  CHECK(q(1, 2) == 0.0f);  // not written: the first assignment failed
  CHECK_THROWS_WITH(assign_together(std::tie(q, p), x * 2.0f, log(x)), Catch::Contains("NaN at index [0,0] of its [2,3] result"));
  CHECK(q(1, 2) == 8.0f);
  debugging::disable_check_numerics();
  assign_together(std::tie(p, q), log(x), x * 2.0f);  // unchecked again
  CHECK(std::isnan(p(0, 0)));
  CHECK(q(1, 2) == 8.0f);
  // The profiler sees the pass as one op, its loops' labels joined.
  const std::string dir = temp_dir();
  profiler::start(dir);
  assign_together(std::tie(p, q), x * 3.0f, q + 1.0f);
  const auto r = profiler::stop();
  CHECK_THAT(r.summary(10), Catch::Contains("multiply + add"));
  CHECK(q(1, 2) == 9.0f);
}
