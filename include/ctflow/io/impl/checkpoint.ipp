#pragma once
// Definitions of io/checkpoint.hpp (ctflow::io's compiled part; see detail/linkage.hpp).

#include <ctflow/io/checkpoint.hpp>

namespace ctflow::train::detail {

CTFLOW_DECL std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < 10; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 10) s += " and " + std::to_string(names.size() - 10) + " more";
  return s;
}

CTFLOW_DECL std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

CTFLOW_DECL bool file_exists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

CTFLOW_DECL void remove_stale_temporaries(const std::string& directory, const std::string& prefix) {
  DIR* d = ::opendir(directory.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const auto tmp = name.rfind(".tmp");
    if (tmp == std::string::npos || tmp + 4 == name.size()) continue;
    const std::string target = name.substr(0, tmp), digits = name.substr(tmp + 4);
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const bool ours = target == "checkpoint" ||
                      (target.rfind(prefix + "-", 0) == 0 && target.size() > 12 && target.compare(target.size() - 12, 12, ".safetensors") == 0);
    const pid_t pid = pid_t(std::stol(digits));
    if (ours && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) ::unlink((directory + "/" + name).c_str());
  }
  ::closedir(d);
}

}  // namespace ctflow::train::detail

namespace ctflow::train {

CTFLOW_DECL std::string checkpoint_file(const std::string& path) {
  constexpr std::string_view ext = ".safetensors";
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0 ? path : path + std::string(ext);
}

}  // namespace ctflow::train

namespace ctflow::train::detail {

CTFLOW_DECL std::string quote(const std::string& s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') { q += '\\'; q += char(c); }
    else if (c == '\n') q += "\\n";
    else if (c < 0x20 || c >= 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\%03o", unsigned(c));
      q += b;
    } else q += char(c);
  }
  return q + "\"";
}

}  // namespace ctflow::train::detail

namespace ctflow::train {

CTFLOW_DECL std::string format_checkpoint_state(const CheckpointState& s) {
  std::string t = "model_checkpoint_path: " + detail::quote(s.model_checkpoint_path) + "\n";
  for (const auto& p : s.all_model_checkpoint_paths) t += "all_model_checkpoint_paths: " + detail::quote(p) + "\n";
  char b[64];
  for (double ts : s.all_model_checkpoint_timestamps) {
    std::snprintf(b, sizeof b, "%.17g", ts);
    t += std::string("all_model_checkpoint_timestamps: ") + b + "\n";
  }
  std::snprintf(b, sizeof b, "%.17g", s.last_preserved_timestamp);
  return t + "last_preserved_timestamp: " + b + "\n";
}

CTFLOW_DECL CheckpointState parse_checkpoint_state(std::string_view text, const std::string& name) {
  CheckpointState s;
  std::size_t line_no = 0, at = 0;
  bool has_latest = false;
  while (at < text.size()) {
    const std::size_t eol = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, eol - at);
    at = eol + 1;
    ++line_no;
    auto bad = [&](const std::string& why) -> void {
      throw io_error(std::string(detail::what) + ": " + name + ":" + std::to_string(line_no) + ": " + why);
    };
    std::size_t i = 0;
    auto skip_space = [&] { while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i; };
    skip_space();
    if (i == line.size() || line[i] == '#') continue;
    const std::size_t key_begin = i;
    while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
    const std::string_view key = line.substr(key_begin, i - key_begin);
    if (key.empty()) bad("expected a field name");
    skip_space();
    if (i == line.size() || line[i] != ':') bad("expected ':' after '" + std::string(key) + "'");
    ++i;
    skip_space();
    std::string str;
    double num = 0;
    bool is_string = false;
    if (i < line.size() && (line[i] == '"' || line[i] == '\'')) {
      is_string = true;
      const char q = line[i++];
      for (;;) {
        if (i >= line.size()) bad("unterminated string");
        const char c = line[i++];
        if (c == q) break;
        if (c != '\\') { str += c; continue; }
        if (i >= line.size()) bad("unterminated escape");
        const char e = line[i++];
        switch (e) {
          case 'n': str += '\n'; break;
          case 't': str += '\t'; break;
          case 'r': str += '\r'; break;
          case '"': case '\'': case '\\': str += e; break;
          default:
            if (e >= '0' && e <= '7') {
              unsigned v = unsigned(e - '0');
              for (int k = 0; k < 2 && i < line.size() && line[i] >= '0' && line[i] <= '7'; ++k) v = v * 8 + unsigned(line[i++] - '0');
              if (v > 255) bad("octal escape out of range");
              str += char(v);
            } else {
              bad(std::string("unknown escape '\\") + e + "'");
            }
        }
      }
    } else {
      const std::size_t nb = i;
      while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '.' || line[i] == '-' || line[i] == '+')) ++i;
      const std::string token(line.substr(nb, i - nb));
      if (token.empty()) bad("expected a value for '" + std::string(key) + "'");
      char* end = nullptr;
      num = std::strtod(token.c_str(), &end);
      if (end != token.c_str() + token.size() || !std::isfinite(num)) bad("'" + token + "' is not a number");
    }
    skip_space();
    if (i != line.size() && line[i] != '#') bad("unexpected text after the value of '" + std::string(key) + "'");
    const bool wants_string = key == "model_checkpoint_path" || key == "all_model_checkpoint_paths";
    const bool wants_number = key == "all_model_checkpoint_timestamps" || key == "last_preserved_timestamp";
    if ((wants_string && !is_string) || (wants_number && is_string)) bad("wrong kind of value for '" + std::string(key) + "'");
    if (key == "model_checkpoint_path") { s.model_checkpoint_path = str; has_latest = true; }
    else if (key == "all_model_checkpoint_paths") s.all_model_checkpoint_paths.push_back(str);
    else if (key == "all_model_checkpoint_timestamps") s.all_model_checkpoint_timestamps.push_back(num);
    else if (key == "last_preserved_timestamp") s.last_preserved_timestamp = num;
  }
  if (!has_latest && !s.all_model_checkpoint_paths.empty()) s.model_checkpoint_path = s.all_model_checkpoint_paths.back();
  return s;
}

CTFLOW_DECL std::optional<CheckpointState> get_checkpoint_state(const std::string& directory) {
  const std::string path = directory + "/checkpoint";
  if (!detail::file_exists(path)) return std::nullopt;
  ctflow::detail::input_file in(path, ctflow::detail::compression::none, detail::what);
  std::string text(max_checkpoint_state_bytes + 1, '\0');
  text.resize(in.read(text.data(), text.size()));
  if (text.size() > max_checkpoint_state_bytes) throw io_error(std::string(detail::what) + ": " + path + ": larger than 16 MiB, not an index");
  return parse_checkpoint_state(text, path);
}

CTFLOW_DECL void update_checkpoint_state(const std::string& directory, const CheckpointState& state) {
  const std::string text = format_checkpoint_state(state);
  ctflow::detail::atomic_output out(directory + "/checkpoint", ctflow::detail::compression::none, detail::what);
  out.write(text.data(), text.size());
  out.commit();
}

CTFLOW_DECL std::optional<std::string> latest_checkpoint(const std::string& directory) {
  const auto state = get_checkpoint_state(directory);
  if (!state || state->model_checkpoint_path.empty()) return std::nullopt;
  const std::string& p = state->model_checkpoint_path;
  std::string path = p[0] == '/' ? p : directory + "/" + p;
  if (!detail::file_exists(checkpoint_file(path))) return std::nullopt;
  return path;
}

CTFLOW_DECL void CheckpointLoadStatus::assert_consumed() const {
  if (path.empty()) throw value_error(std::string(detail::what) + ": nothing was restored");
  if (!missing.empty()) throw value_error(std::string(detail::what) + ": " + path + " has no value for " + detail::join_names(missing));
  if (!unused.empty()) throw value_error(std::string(detail::what) + ": " + path + " has unused values " + detail::join_names(unused));
}

CTFLOW_DECL std::string Checkpoint::write(const std::string& file_prefix) {
  const std::vector<detail::slot> slots = collect();
  std::vector<std::pair<std::string, io::tensor_ref>> tensors;
  tensors.reserve(slots.size());
  for (const auto& s : slots) tensors.emplace_back(s.key, io::tensor_ref(s.dtype, s.shape, s.data, s.nbytes));
  io::safetensors::save_file(tensors, checkpoint_file(file_prefix), {{"format", "ctflow.train.Checkpoint"}});
  return file_prefix;
}

CTFLOW_DECL std::string Checkpoint::save(const std::string& file_prefix) {
  const std::string path = numbered_write(file_prefix, std::nullopt);
  const std::string dir = ctflow::detail::parent_directory(path);
  const std::string rel = detail::base_name(path);
  update_checkpoint_state(dir, {rel, {rel}, {ctflow::detail::wall_seconds()}, 0});
  return path;
}

CTFLOW_DECL CheckpointLoadStatus Checkpoint::restore(const std::optional<std::string>& save_path, const RestoreOptions& options) {
  CheckpointLoadStatus status;
  if (!save_path) return status;
  const std::string file = checkpoint_file(*save_path);
  const io::safetensors::File f(file);
  std::vector<detail::slot> slots = collect();
  std::vector<const detail::slot*> found;
  std::vector<std::string> used;
  for (const auto& s : slots) {
    if (!f.contains(s.key)) {
      if (s.key != "save_counter") status.missing.push_back(s.key);
      continue;
    }
    const auto& info = f.info(s.key);
    if (info.dtype != s.dtype)
      throw io_error(std::string(detail::what) + ": " + file + ": '" + s.key + "' is " + info.dtype + " in the file, " + std::string(s.dtype) +
                     " in the object");
    bool fits = info.shape.size() == s.static_extents.size();
    for (std::size_t k = 0; fits && k < info.shape.size(); ++k) fits = s.static_extents[k] == dyn || s.static_extents[k] == info.shape[k];
    if (!fits)
      throw shape_error(std::string(detail::what) + ": " + file + ": '" + s.key + "' has shape " + format_dims(info.shape) +
                        " in the file, " + format_dims(s.static_extents) + " in the object");
    found.push_back(&s);
    used.push_back(s.key);
  }
  std::sort(used.begin(), used.end());
  for (const auto& k : f.keys())
    if (!std::binary_search(used.begin(), used.end(), k)) status.unused.push_back(k);
  if (!options.expect_partial) {
    if (!status.missing.empty())
      throw io_error(std::string(detail::what) + ": " + file + " has no value for " + detail::join_names(status.missing) +
                     " (RestoreOptions{.expect_partial = true} keeps their values)");
    if (!status.unused.empty())
      throw io_error(std::string(detail::what) + ": " + file + " has values no object takes: " + detail::join_names(status.unused) +
                     " (RestoreOptions{.expect_partial = true} ignores them)");
  }
  // Every value is read, into its own buffer or into a tensor made aside for a new shape, before
  // the first object changes; what is left (copies and moves) cannot fail.
  std::vector<std::vector<std::uint8_t>> staged(found.size());
  std::vector<std::function<void()>> commits;
  commits.reserve(found.size());
  for (std::size_t i = 0; i < found.size(); ++i) {
    const detail::slot* s = found[i];
    const auto& info = f.info(s->key);
    if (s->reshape && info.shape != s->shape) {
      void* buffer = nullptr;
      commits.push_back(s->reshape(info.shape, buffer));
      f.read_into(s->key, buffer);
    } else {
      staged[i].resize(std::size_t(info.end - info.begin));
      f.read_into(s->key, staged[i].data());
      commits.push_back([dst = s->data, &bytes = staged[i]] {
        if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
      });
    }
  }
  for (std::size_t i = 0; i < found.size(); ++i) {
    commits[i]();
    status.restored.push_back(found[i]->key);
  }
  status.path = file;
  return status;
}

CTFLOW_DECL std::vector<detail::slot> Checkpoint::collect() {
  std::vector<detail::slot> slots;
  detail::collector c(slots);
  for (const auto& o : objects_) o.walk(c);
  c("save_counter", save_counter);
  std::vector<std::string> keys;
  for (const auto& s : slots) keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  if (auto d = std::adjacent_find(keys.begin(), keys.end()); d != keys.end())
    throw value_error(std::string(detail::what) + ": two objects are named '" + *d + "'");
  return slots;
}

CTFLOW_DECL std::string Checkpoint::numbered_write(const std::string& prefix, std::optional<std::int64_t> number) {
  const std::int64_t before = save_counter();
  save_counter() = before + 1;
  try {
    return write(prefix + "-" + std::to_string(number ? *number : before + 1));
  } catch (...) {
    save_counter() = before;
    throw;
  }
}

CTFLOW_DECL CheckpointManager::CheckpointManager(Checkpoint& checkpoint, std::string directory, std::optional<int> max_to_keep, std::string checkpoint_name)
    : ckpt_(checkpoint), dir_(std::move(directory)), max_to_keep_(max_to_keep), name_(std::move(checkpoint_name)) {
  if (max_to_keep_ && *max_to_keep_ < 1)
    throw value_error("ctflow::train::CheckpointManager: max_to_keep must be at least 1 (or nullopt to keep all), got " +
                      std::to_string(*max_to_keep_));
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw io_error("ctflow::train::CheckpointManager: cannot create " + dir_ + ": " + ec.message());
  detail::remove_stale_temporaries(dir_, name_);
  if (const auto state = get_checkpoint_state(dir_)) {
    for (std::size_t i = 0; i < state->all_model_checkpoint_paths.size(); ++i) {
      const std::string& p = state->all_model_checkpoint_paths[i];
      std::string path = !p.empty() && p[0] == '/' ? p : dir_ + "/" + p;
      if (!detail::file_exists(checkpoint_file(path))) continue;
      checkpoints_.push_back(std::move(path));
      times_.push_back(i < state->all_model_checkpoint_timestamps.size() ? state->all_model_checkpoint_timestamps[i] : 0);
    }
    preserved_ = state->last_preserved_timestamp;
  }
}

CTFLOW_DECL std::string CheckpointManager::save(std::optional<std::int64_t> checkpoint_number) {
  const std::string path = ckpt_.numbered_write(dir_ + "/" + name_, checkpoint_number);
  if (auto it = std::find(checkpoints_.begin(), checkpoints_.end(), path); it != checkpoints_.end()) {
    times_.erase(times_.begin() + (it - checkpoints_.begin()));
    checkpoints_.erase(it);
  }
  checkpoints_.push_back(path);
  times_.push_back(ctflow::detail::wall_seconds());
  std::vector<std::string> swept;
  while (max_to_keep_ && checkpoints_.size() > std::size_t(*max_to_keep_)) {
    swept.push_back(checkpoints_.front());
    checkpoints_.erase(checkpoints_.begin());
    times_.erase(times_.begin());
  }
  CheckpointState state{detail::base_name(path), {}, times_, preserved_};
  for (const auto& c : checkpoints_) state.all_model_checkpoint_paths.push_back(detail::base_name(c));
  update_checkpoint_state(dir_, state);
  for (const auto& s : swept) ::unlink(checkpoint_file(s).c_str());  // only once the index no longer names them
  return path;
}

CTFLOW_DECL std::optional<std::string> CheckpointManager::restore_or_initialize() {
  if (auto p = latest_checkpoint()) {
    ckpt_.restore(p);
    return p;
  }
  return std::nullopt;
}

}  // namespace ctflow::train
