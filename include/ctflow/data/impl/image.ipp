#pragma once
// Definitions of data/image.hpp (ctflow::data's compiled part; see detail/linkage.hpp).

#include <cstdio>  // jpeglib.h uses size_t and FILE without including their headers

#include <jpeglib.h>
#include <jerror.h>  // after jpeglib.h: the codes of its messages
#include <png.h>

#include <csetjmp>

#include <ctflow/data/image.hpp>

namespace ctflow::io {

namespace detail {

CTFLOW_DECL void image_error(const char* op, const std::string& why) { throw io_error(std::string(op) + ": " + why); }

CTFLOW_DECL void check_channels(const char* op, int channels, bool png) {
  if (channels == 0 || channels == 1 || channels == 3 || channels == 4 || (png && channels == 2)) return;
  throw value_error(std::string(op) + ": channels must be 0, 1, " + (png ? "2, " : "") + "3 or 4, got " + std::to_string(channels));
}

CTFLOW_DECL void check_size(const char* op, std::size_t h, std::size_t w, std::size_t c) {
  if (h == 0 || w == 0) image_error(op, "empty image (" + std::to_string(h) + "x" + std::to_string(w) + ")");
  if (h > max_image_bytes / w / c) image_error(op, "image of " + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) + " exceeds max_image_bytes");
}

CTFLOW_DECL Image convert_channels(const std::uint8_t* in, std::size_t h, std::size_t w, int from, int to) {
  Image out({h, w, std::size_t(to)});
  std::uint8_t* o = out.data();
  for (std::size_t i = 0; i < h * w; ++i, in += from, o += to) {
    const bool color = from >= 3;
    const std::uint8_t alpha = (from == 2 || from == 4) ? in[from - 1] : 255;
    std::uint8_t r = in[0], g = color ? in[1] : in[0], b = color ? in[2] : in[0];
    if (to <= 2) {
      const std::uint8_t gray = color ? std::uint8_t((6968u * r + 23434u * g + 2366u * b + 16384u) >> 15) : r;
      o[0] = gray;
      if (to == 2) o[1] = alpha;
    } else {
      o[0] = r; o[1] = g; o[2] = b;
      if (to == 4) o[3] = alpha;
    }
  }
  return out;
}

}  // namespace detail

CTFLOW_DECL Image decode_png(std::string_view contents, int channels) {
  constexpr const char* op = "ctflow::io::decode_png";
  detail::check_channels(op, channels, true);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, contents.data(), contents.size()))
    detail::image_error(op, std::string("cannot read the PNG header: ") + img.message);
  const int file_channels = int(PNG_IMAGE_SAMPLE_CHANNELS(img.format));
  static constexpr png_uint_32 formats[] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  img.format = formats[file_channels];
  const std::size_t h = img.height, w = img.width, c = std::size_t(file_channels);
  try {
    detail::check_size(op, h, w, c);
  } catch (...) {
    png_image_free(&img);
    throw;
  }
  std::vector<std::uint8_t> pixels(h * w * c);
  if (!png_image_finish_read(&img, nullptr, pixels.data(), 0, nullptr)) {
    const std::string why = img.message;
    png_image_free(&img);
    detail::image_error(op, "corrupt PNG data: " + why);
  }
  return detail::convert_channels(pixels.data(), h, w, file_channels, channels == 0 ? file_channels : channels);
}

CTFLOW_DECL std::string detail::encode_png(const std::uint8_t* pixels, const dims_t<3>& d) {
  constexpr const char* op = "ctflow::io::encode_png";
  if (d[2] < 1 || d[2] > 4) throw shape_error(std::string(op) + ": 1 to 4 channels, got " + format_dims(d));
  if (d[0] == 0 || d[1] == 0 || d[0] > 0x7FFFFFFF || d[1] > 0x7FFFFFFF) throw shape_error(std::string(op) + ": cannot encode an image of shape " + format_dims(d));
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  img.width = png_uint_32(d[1]);
  img.height = png_uint_32(d[0]);
  static constexpr png_uint_32 formats[] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB, PNG_FORMAT_RGBA};
  img.format = formats[d[2]];
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&img, nullptr, &size, 0, pixels, 0, nullptr))
    detail::image_error(op, std::string("cannot encode: ") + img.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&img, out.data(), &size, 0, pixels, 0, nullptr))
    detail::image_error(op, std::string("cannot encode: ") + img.message);
  out.resize(size);
  return out;
}

namespace detail {

/// What libjpeg calls back: the error manager (first, so that libjpeg's pointer to it is one to
/// the whole), the jump an error takes with its message (msg_code -1: ctflow's own), and the
/// progress monitor.
struct jpeg_handlers {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  jpeg_progress_mgr progress;
};

/// Reads the header (the file's [height, width, components] into `shape`) and, when `out` is
/// given, decodes into it (channels: the caller's, checked): false, with `failure` set, when the
/// data cannot be read. Every object a longjmp from libjpeg crosses belongs to the caller, so
/// none is left indeterminate and no destructor is skipped.
inline bool jpeg_read(jpeg_decompress_struct& cinfo, jpeg_handlers& err, std::string_view contents, int channels, dims_t<3>& shape, Image* out,
                      std::string& failure) {
  if (setjmp(err.jump)) {
    const bool memory = err.mgr.msg_code == JERR_NO_BACKING_STORE || err.mgr.msg_code == JERR_OUT_OF_MEMORY;
    failure = err.mgr.msg_code == -1 ? std::string(err.message)
              : memory               ? "decoding needs more than max_image_bytes of working memory (" + std::string(err.message) + ")"
                                       : "corrupt JPEG data: " + std::string(err.message);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  // The decoder's own memory (a progressive file's coefficients, 2 bytes a sample) is bounded too.
  cinfo.mem->max_memory_to_use = long(max_image_bytes);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(contents.data()), static_cast<unsigned long>(contents.size()));
  jpeg_read_header(&cinfo, TRUE);
  shape = {cinfo.image_height, cinfo.image_width, std::size_t(cinfo.num_components)};
  if (!out) return true;
  if (cinfo.num_components != 1 && cinfo.num_components != 3) {
    failure = "JPEG with " + std::to_string(cinfo.num_components) + " components is not supported";
    return false;
  }
  const int want = channels == 0 ? cinfo.num_components : channels;
  cinfo.out_color_space = want == 1 ? JCS_GRAYSCALE : JCS_RGB;
  // The header's size is checked before the decoder allocates anything for the image.
  jpeg_calc_output_dimensions(&cinfo);
  const std::size_t h = cinfo.output_height, w = cinfo.output_width, c = std::size_t(cinfo.output_components);
  if (h == 0 || w == 0 || h > max_image_bytes / w / c) {
    failure = "image of " + std::to_string(h) + "x" + std::to_string(w) + "x" + std::to_string(c) + " exceeds max_image_bytes";
    return false;
  }
  // Huffman coding spends at least one bit on every 8x8 block of every component (its DC code),
  // so data shorter than an eighth of a byte a block cannot be the image its header claims:
  // truncated, as libjpeg would find only after allocating and decoding it all. (Arithmetic
  // coding has no such floor: a blank image codes to nothing, and decodes within the bounds.)
  if (!cinfo.arith_code) {
    std::uint64_t blocks = 0;
    for (int i = 0; i < cinfo.num_components; ++i) blocks += std::uint64_t(cinfo.comp_info[i].width_in_blocks) * cinfo.comp_info[i].height_in_blocks;
    if (contents.size() < blocks / 8) {
      failure = "truncated JPEG data: " + std::to_string(contents.size()) + " bytes cannot hold the " + std::to_string(h) + "x" + std::to_string(w) +
                " image its header claims (at least " + std::to_string(blocks / 8) + ")";
      return false;
    }
  }
  // A progressive scan can cover every block in a few bytes, so a small file of many scans would
  // cost hours: libjpeg calls the monitor for each row of blocks it reads, with the scan's number.
  err.progress.progress_monitor = [](j_common_ptr c) {
    if (reinterpret_cast<j_decompress_ptr>(c)->input_scan_number <= int(max_jpeg_scans)) return;
    auto* e = reinterpret_cast<jpeg_handlers*>(c->err);
    std::snprintf(e->message, sizeof e->message, "a JPEG of more than %d scans (max_jpeg_scans)", int(max_jpeg_scans));
    e->mgr.msg_code = -1;
    std::longjmp(e->jump, 1);
  };
  cinfo.progress = &err.progress;
  jpeg_start_decompress(&cinfo);
  *out = Image({h, w, c}, uninitialized);  // decoded in place, each row once: the result is the only copy
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->data() + std::size_t(cinfo.output_scanline) * w * c;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  return true;
}

/// jpeg_read with libjpeg's errors as io_error of `op`.
inline void jpeg_call(const char* op, std::string_view contents, int channels, dims_t<3>& shape, Image* out) {
  jpeg_decompress_struct cinfo{};
  jpeg_handlers err{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = [](j_common_ptr c) {
    auto* e = reinterpret_cast<jpeg_handlers*>(c->err);
    (*c->err->format_message)(c, e->message);
    std::longjmp(e->jump, 1);
  };
  // Warnings (a corrupt restart marker, extraneous bytes) are not fatal, as in TensorFlow; data
  // that ends early is: TensorFlow raises "Premature end of JPEG data" where libjpeg would pad.
  err.mgr.emit_message = [](j_common_ptr c, int level) {
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) c->err->error_exit(c);
  };
  std::string failure;
  const bool ok = jpeg_read(cinfo, err, contents, channels, shape, out, failure);
  jpeg_destroy_decompress(&cinfo);
  if (!ok) image_error(op, failure);
}

}  // namespace detail

CTFLOW_DECL Image decode_jpeg(std::string_view contents, int channels) {
  constexpr const char* op = "ctflow::io::decode_jpeg";
  detail::check_channels(op, channels, false);
  if (channels == 4) throw value_error(std::string(op) + ": channels must be 0, 1 or 3");
  dims_t<3> shape{};
  Image out;
  detail::jpeg_call(op, contents, channels, shape, &out);
  return out;
}

CTFLOW_DECL dims_t<3> detail::jpeg_shape(std::string_view contents) {
  dims_t<3> shape{};
  jpeg_call("ctflow::io::extract_jpeg_shape", contents, 0, shape, nullptr);
  return shape;
}

}  // namespace ctflow::io
