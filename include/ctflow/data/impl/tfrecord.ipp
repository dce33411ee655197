#pragma once
// Definitions of data/tfrecord.hpp (ctflow::data's compiled part; see detail/linkage.hpp).

#include <ctflow/data/tfrecord.hpp>

namespace ctflow::io {

CTFLOW_DECL TFRecordWriter::~TFRecordWriter() {
  if (!closed_ && std::uncaught_exceptions() == exceptions_) {
    try { close(); } catch (...) {}
  }
}

CTFLOW_DECL void TFRecordWriter::write(std::string_view record) {
  if (closed_) throw value_error("ctflow::io::TFRecordWriter: write after close");
  detail::write_record([&](const void* p, std::size_t n) { out_.write(p, n); }, record);
}

CTFLOW_DECL void TFRecordWriter::close() {
  if (closed_) return;
  closed_ = true;
  out_.commit();
}

CTFLOW_DECL std::vector<std::string> read_tfrecords(std::span<const std::uint8_t> bytes, const std::string& name) {
  ctflow::detail::input_memory src(bytes, name);
  detail::record_reader reader(src);
  std::vector<std::string> records;
  for (std::string r; reader.next(r);) records.push_back(r);
  return records;
}

}  // namespace ctflow::io
