#pragma once
/// @brief tf.train.Checkpoint, CheckpointManager and latest_checkpoint.
///
/// A Checkpoint names trackable objects: tensors and variables, C++ numbers (step counters),
/// vectors of trackables, Keras models (their weights by path: "model/dense/kernel"), and any
/// type with a `track` member naming its own children:
///
///     struct Model {
///       Variable<float, Shape<784, 10>> w; Variable<float, Shape<10>> b;
///       template <class V> void track(V& v) { v("w", w); v("b", b); }
///     };
///     train::Checkpoint ckpt{{"model", model}, {"step", step}};
///     train::CheckpointManager manager(ckpt, "ckpts", 3);
///     ckpt.restore(manager.latest_checkpoint());   // nothing to do on a first run
///     manager.save();                               // ckpts/ckpt-1.safetensors, ckpts/checkpoint
///
/// Each checkpoint is one safetensors file whose tensor names are the objects' paths
/// ("model/w", "step", "save_counter"). The `checkpoint` index beside it is TensorFlow's
/// CheckpointState text. Every file is written atomically (temporary file, fsync, rename) and
/// the index last, so a process killed during a save leaves the previous checkpoint loadable.
/// A restore checks every name, dtype and shape before it changes any variable.

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ctflow/core/variable.hpp>
#include <ctflow/detail/file.hpp>
#include <ctflow/detail/linkage.hpp>
#include <ctflow/io/safetensors.hpp>

namespace ctflow::train {

namespace detail {

inline constexpr const char* what = "ctflow::train::Checkpoint";

/// One tensor of an object graph: its path and its storage.
struct slot {
  std::string key;
  std::string_view dtype;
  std::vector<std::uint64_t> shape;
  std::vector<std::size_t> static_extents;  // dyn where the type leaves an extent open
  void* data = nullptr;
  std::uint64_t nbytes = 0;
  /// For tensors with dyn extents: makes a tensor of another shape aside, sets `buffer` to its
  /// memory, and returns the move that puts it in place (which cannot fail).
  std::function<std::function<void()>(const std::vector<std::uint64_t>&, void*& buffer)> reshape;
};

template <class X> concept owning_tensor = requires {
  typename X::value_type;
  typename X::shape_type;
  typename X::device_type;
  X::is_view;
} && !X::is_view && std::is_base_of_v<Tensor<typename X::value_type, typename X::shape_type, typename X::device_type>, X>;

/// A variable's storage described at run time: its extents and its values, as a Keras model's
/// `track` names its weights (keras::variable_ref).
template <class X> concept storage_ref = requires(X& x) {
  { x.shape.size() } -> std::convertible_to<std::size_t>;
  { x.values.data() } -> std::convertible_to<const void*>;
  requires DType<std::remove_const_t<typename decltype(x.values)::element_type>>;
};

template <class X> struct is_vector : std::false_type {};
template <class X, class A> struct is_vector<std::vector<X, A>> : std::true_type {};

/// Walks an object graph, collecting the slots of every tensor under its path.
class collector {
 public:
  explicit collector(std::vector<slot>& out, std::string prefix = "") : out_(out), prefix_(std::move(prefix)) {}

  template <class X> void operator()(std::string_view name, X& x) {
    if (name.empty() || name.find('/') != std::string_view::npos)
      throw value_error(std::string(what) + ": invalid child name '" + std::string(name) + "' under '" + prefix_ + "' (non-empty, no '/')");
    const std::string path = prefix_.empty() ? std::string(name) : prefix_ + "/" + std::string(name);
    if constexpr (owning_tensor<X>) {
      add_tensor(path, static_cast<Tensor<typename X::value_type, typename X::shape_type, typename X::device_type>&>(x));
    } else if constexpr (storage_ref<X>) {
      using T = std::remove_const_t<typename decltype(x.values)::element_type>;
      std::uint64_t count = 1;
      for (auto e : x.shape) count *= e;
      if (count != x.values.size())
        throw value_error(std::string(what) + ": '" + path + "' has " + std::to_string(x.values.size()) + " values for shape " + format_dims(x.shape));
      out_.push_back({path, io::safetensors_dtype<T>(), {x.shape.begin(), x.shape.end()}, {x.shape.begin(), x.shape.end()},
                      const_cast<T*>(x.values.data()), count * sizeof(T), {}});
    } else if constexpr (std::is_arithmetic_v<X> && DType<X>) {
      out_.push_back({path, io::safetensors_dtype<X>(), {}, {}, &x, sizeof(X), {}});
    } else if constexpr (is_vector<X>::value) {
      collector child(out_, path);
      for (std::size_t i = 0; i < x.size(); ++i) child(std::to_string(i), x[i]);
    } else if constexpr (requires(collector& c) { x.track(c); }) {
      collector child(out_, path);
      x.track(child);
    } else {
      static_assert(sizeof(X) == 0,
                    "ctflow::train::Checkpoint: not trackable; give the type `template <class V> void track(V& v)` naming its children");
    }
  }

 private:
  template <class T, class S, class D> void add_tensor(const std::string& path, Tensor<T, S, D>& t) {
    static_assert(host_device_v<D>,
                  "ctflow::train::Checkpoint: it reads and writes tensors in place, so they must be on a device whose memory the "
                  "host reads (cpu, reference); copy the values with to<cpu>(t) and track the copy");
    slot s{path, io::safetensors_dtype<T>(), {t.dims().begin(), t.dims().end()}, {S::extents.begin(), S::extents.end()},
           t.data(), t.size() * sizeof(T), {}};
    if constexpr (!S::is_static) {
      s.reshape = [&t](const std::vector<std::uint64_t>& shape, void*& buffer) -> std::function<void()> {
        dims_t<std::size_t(S::rank)> d{};
        std::copy(shape.begin(), shape.end(), d.begin());
        auto made = std::make_shared<Tensor<T, S, D>>(d);
        buffer = made->data();
        return [&t, made] { t = std::move(*made); };
      };
    }
    out_.push_back(std::move(s));
  }
  std::vector<slot>& out_;
  std::string prefix_;
};

CTFLOW_DECL std::string join_names(const std::vector<std::string>& names);

CTFLOW_DECL std::string base_name(const std::string& path);
CTFLOW_DECL bool file_exists(const std::string& path);
/// Removes the temporary files ("<file>.tmp<pid>") that killed writers left in directory: those
/// of the index and of checkpoints named prefix-*, whose process is gone.
CTFLOW_DECL void remove_stale_temporaries(const std::string& directory, const std::string& prefix);

}  // namespace detail

/// @brief The file a checkpoint path ("dir/ckpt-3") names: "dir/ckpt-3.safetensors".
CTFLOW_DECL std::string checkpoint_file(const std::string& path);

// ---- the `checkpoint` index: TensorFlow's CheckpointState in protobuf text format ------------

/// @brief tf.train.CheckpointState: the latest checkpoint and those kept, as paths relative to
/// the index's directory (or absolute).
struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths;
  std::vector<double> all_model_checkpoint_timestamps;
  double last_preserved_timestamp = 0;
};

namespace detail {

CTFLOW_DECL std::string quote(const std::string& s);

}  // namespace detail

/// @brief The text of a CheckpointState, as TensorFlow writes the `checkpoint` file.
CTFLOW_DECL std::string format_checkpoint_state(const CheckpointState& s);

/// @brief Parses the text of a `checkpoint` file; anything malformed is an io_error naming the
/// file, the line and the reason. Unknown fields are skipped.
CTFLOW_DECL CheckpointState parse_checkpoint_state(std::string_view text, const std::string& name = "checkpoint");

/// @brief The largest `checkpoint` index a reader accepts.
inline constexpr std::size_t max_checkpoint_state_bytes = std::size_t(16) << 20;

/// @brief tf.train.get_checkpoint_state: the index of directory, or nothing when it has none.
CTFLOW_DECL std::optional<CheckpointState> get_checkpoint_state(const std::string& directory);

/// @brief Writes directory/checkpoint atomically.
CTFLOW_DECL void update_checkpoint_state(const std::string& directory, const CheckpointState& state);

/// @brief tf.train.latest_checkpoint: the path ("dir/ckpt-7") of the newest checkpoint in
/// directory, or nothing when there is none (no index, or its file is gone).
CTFLOW_DECL std::optional<std::string> latest_checkpoint(const std::string& directory);

// ---- Checkpoint ------------------------------------------------------------------------------

/// @brief A named object given to Checkpoint (the keyword arguments of tf.train.Checkpoint). The
/// object must outlive the Checkpoint.
struct trackable_ref {
  template <class X> trackable_ref(std::string name, X& object)
      : walk([name = std::move(name), &object](detail::collector& c) { c(name, object); }) {}
  std::function<void(detail::collector&)> walk;
};

/// @brief tf.train.CheckpointOptions for restore: `expect_partial` accepts a file with values
/// no object uses and objects the file lacks (both are errors otherwise).
struct RestoreOptions {
  bool expect_partial = false;
};

/// @brief What a restore did (tf's CheckpointLoadStatus).
struct CheckpointLoadStatus {
  std::string path;                        ///< the file read; empty when nothing was restored
  std::vector<std::string> restored;       ///< object paths given values
  std::vector<std::string> missing;        ///< object paths the file has no value for
  std::vector<std::string> unused;         ///< file values no object took
  /// @brief Throws unless every object was restored and every value used.
  void assert_consumed() const;
};

/// @brief tf.train.Checkpoint over named trackable objects.
class Checkpoint {
 public:
  Checkpoint(std::initializer_list<trackable_ref> objects) : objects_(objects) {}
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  /// @brief Number of saves so far (saved and restored with the objects).
  Variable<std::int64_t, Shape<>> save_counter{Tensor<std::int64_t, Shape<>>(), "save_counter", false};

  /// @brief Writes the objects to file_prefix (the path, with ".safetensors" added) atomically;
  /// no numbering, no index. Returns the path.
  std::string write(const std::string& file_prefix);

  /// @brief Increments save_counter, writes "file_prefix-N" (N the new count) and makes it the
  /// latest in the `checkpoint` index of its directory. Returns "file_prefix-N".
  std::string save(const std::string& file_prefix);

  /// @brief Restores the objects from save_path (as save or write returned it, with or without
  /// ".safetensors"). Every name, dtype and shape is checked before any object changes; nullopt
  /// restores nothing (a first run: `ckpt.restore(manager.latest_checkpoint())`).
  CheckpointLoadStatus restore(const std::optional<std::string>& save_path, const RestoreOptions& options = {});

 private:
  friend class CheckpointManager;

  std::vector<detail::slot> collect();

  /// Increments save_counter and writes "prefix-<number or the new count>"; on failure the
  /// counter is left as it was.
  std::string numbered_write(const std::string& prefix, std::optional<std::int64_t> number);

  std::vector<trackable_ref> objects_;
};

/// @brief tf.train.CheckpointManager: numbered saves in a directory, keeping the newest
/// max_to_keep (nullopt: all). It picks up the index a previous run left in the directory, and
/// removes the temporary files of writers that were killed.
class CheckpointManager {
 public:
  CheckpointManager(Checkpoint& checkpoint, std::string directory, std::optional<int> max_to_keep, std::string checkpoint_name = "ckpt");

  /// @brief Saves "directory/<checkpoint_name>-N" (N: checkpoint_number, else the new
  /// save_counter), records it in the index, then deletes checkpoints beyond max_to_keep.
  std::string save(std::optional<std::int64_t> checkpoint_number = std::nullopt);

  /// @brief The newest checkpoint's path, or nothing.
  std::optional<std::string> latest_checkpoint() const {
    if (checkpoints_.empty()) return std::nullopt;
    return checkpoints_.back();
  }
  /// @brief The kept checkpoints, oldest first.
  const std::vector<std::string>& checkpoints() const { return checkpoints_; }
  /// @brief The directory the checkpoints and the index are in.
  const std::string& directory() const { return dir_; }

  /// @brief Restores the latest checkpoint if there is one; returns its path.
  std::optional<std::string> restore_or_initialize();

 private:
  Checkpoint& ckpt_;
  std::string dir_;
  std::optional<int> max_to_keep_;
  std::string name_;
  std::vector<std::string> checkpoints_;
  std::vector<double> times_;
  double preserved_ = 0;
};

}  // namespace ctflow::train

#if !defined(CTFLOW_SEPARATE_COMPILATION)
#include <ctflow/io/impl/checkpoint.ipp>
#endif
