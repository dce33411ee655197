// The data pipeline's speed goals:
//  - tfrecord_read: TFRecordDataset over a 256 MiB file (page cache warm) with both CRC32Cs
//    checked on every record, one core; beside it raw_read, the same file read in 1 MiB blocks
//    with no parsing, the ceiling. Goal: at least 1 GB/s.
//  - fashion_mnist_pipeline: one epoch of from_tensor_slices(x_train, y_train) -> map(scale to
//    [0,1] float) -> shuffle(60000) -> batch(64) -> prefetch, in examples per second (the PyTorch
//    DataLoader peer, bench/peers/data_torch.py, does the same in the same run).
#include <benchmark/benchmark.h>

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <ctflow/ctflow.hpp>
#include <ctflow/data.hpp>

using namespace ctflow;

namespace {

const std::string& tfrecord_file(std::size_t record_bytes) {
  static std::string paths[2];
  std::string& path = paths[record_bytes > 4096];
  if (path.empty()) {
    path = "/tmp/ctflow_bench_" + std::to_string(record_bytes) + ".tfrecord";
    io::TFRecordWriter w(path);
    std::string rec(record_bytes, '\0');
    for (std::size_t i = 0; i < rec.size(); ++i) rec[i] = char(i * 31 + 7);
    for (std::size_t total = 0; total < (std::size_t(256) << 20); total += record_bytes) w.write(rec);
  }
  return path;
}

void tfrecord_read(benchmark::State& state) {
  const std::size_t record_bytes = std::size_t(state.range(0));
  const auto& path = tfrecord_file(record_bytes);
  auto ds = data::TFRecordDataset(path);
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    for (const auto& r : ds) bytes += r.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(std::int64_t(state.iterations() * bytes));
  state.counters["GB/s"] = benchmark::Counter(double(bytes) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(tfrecord_read)->Arg(1024)->Arg(100 * 1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void raw_read(benchmark::State& state) {
  const auto& path = tfrecord_file(std::size_t(state.range(0)));
  std::vector<char> buf(1 << 20);
  std::size_t bytes = 0;
  for (auto _ : state) {
    bytes = 0;
    const int fd = ::open(path.c_str(), O_RDONLY);
    for (ssize_t k; (k = ::read(fd, buf.data(), buf.size())) > 0;) bytes += std::size_t(k);
    ::close(fd);
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["GB/s"] = benchmark::Counter(double(bytes) * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(raw_read)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();

void fashion_mnist_pipeline(benchmark::State& state) {
  config::set_num_threads(int(state.range(0)));
  static const auto train = datasets::fashion_mnist::load_data().first;
  auto ds = data::from_tensor_slices(train.first, train.second)
                .map([](auto x, auto y) { return std::tuple{cast<float>(x) / 255.0f, cast<std::int32_t>(y)}; })
                .shuffle(60000, 1)
                .batch(64)
                .prefetch(data::AUTOTUNE);
  std::size_t examples = 0;
  for (auto _ : state) {
    float check = 0;
    for (const auto& [x, y] : ds) {
      examples += x.dims()[0];
      check += x(0, 14, 14) + float(y(0));
    }
    benchmark::DoNotOptimize(check);
  }
  state.counters["examples/s"] = benchmark::Counter(double(examples), benchmark::Counter::kIsRate);
}
BENCHMARK(fashion_mnist_pipeline)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
