// image_decoder: see image_decoder.hpp. libjpeg and libpng report errors by longjmp: every
// C++ object of a decode function is constructed before its setjmp, so the jump skips no
// destructor, and the error becomes an exception only back in that function's own frame.
#include "io/import/image_decoder.hpp"

#include <csetjmp>
#include <cstdio>  // before jpeglib.h, which needs FILE
#include <cstring>

#include <jerror.h>
#include <jpeglib.h>
#include <png.h>

#include "core/base/error.hpp"

namespace lockstep::io {
namespace {

constexpr int64_t kMaxPixels = int64_t{1} << 26;  // 64 megapixels: far beyond a training image

bool is_jpeg(const unsigned char* d, size_t n) { return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF; }
bool is_png(const unsigned char* d, size_t n) { return n >= 8 && png_sig_cmp(d, 0, 8) == 0; }

void check_size(int64_t h, int64_t w, const std::string& what) {
  if (h <= 0 || w <= 0 || h > 65535 || w > 65535 || h * w > kMaxPixels)
    throw Error(what + ": an image of " + std::to_string(w) + "x" + std::to_string(h) + " pixels is not imported");
}

// ---- EXIF orientation ----------------------------------------------------------------------

// The orientation tag (0x0112) of IFD0 in an APP1 "Exif" marker; 1 (as stored) when absent.
int exif_orientation(jpeg_saved_marker_ptr m) {
  for (; m != nullptr; m = m->next) {
    if (m->marker != JPEG_APP0 + 1 || m->data_length < 14 || std::memcmp(m->data, "Exif\0\0", 6) != 0) continue;
    const uint8_t* t = m->data + 6;
    const size_t n = m->data_length - 6;
    const bool le = t[0] == 'I' && t[1] == 'I';
    if (!le && !(t[0] == 'M' && t[1] == 'M')) return 1;
    const auto u16 = [&](size_t o) -> uint32_t {
      return o + 2 > n ? 0 : le ? (t[o] | (t[o + 1] << 8)) : ((t[o] << 8) | t[o + 1]);
    };
    const auto u32 = [&](size_t o) -> uint32_t {
      return o + 4 > n ? 0 : le ? (u16(o) | (u16(o + 2) << 16)) : ((u16(o) << 16) | u16(o + 2));
    };
    const size_t ifd = u32(4);
    if (ifd < 8 || ifd + 2 > n) return 1;
    const uint32_t entries = u16(ifd);
    for (uint32_t i = 0; i < entries; ++i) {
      const size_t e = ifd + 2 + 12 * static_cast<size_t>(i);
      if (e + 12 > n) break;
      if (u16(e) == 0x0112) {  // a SHORT (type 3) as the standard says; some writers store a LONG (4)
        const uint32_t v = u16(e + 2) == 4 ? u32(e + 8) : u16(e + 8);
        return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
      }
    }
  }
  return 1;
}

// The image as it should be seen (PIL's ImageOps.exif_transpose): 2 mirror, 3 rotate 180,
// 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90 anticlockwise.
Image apply_orientation(Image in, int o) {
  if (o == 1) return in;
  const int H = in.height, W = in.width, c = in.channels;
  Image out;
  out.channels = c;
  out.height = o >= 5 ? W : H;
  out.width = o >= 5 ? H : W;
  out.pixels.resize(in.pixels.size());
  for (int y = 0; y < out.height; ++y) {
    for (int x = 0; x < out.width; ++x) {
      int sy = y, sx = x;
      switch (o) {
        case 2: sx = W - 1 - x; break;
        case 3: sy = H - 1 - y; sx = W - 1 - x; break;
        case 4: sy = H - 1 - y; break;
        case 5: sy = x; sx = y; break;
        case 6: sy = H - 1 - x; sx = y; break;
        case 7: sy = H - 1 - x; sx = W - 1 - y; break;
        default: sy = x; sx = W - 1 - y; break;  // 8
      }
      std::memcpy(&out.pixels[(static_cast<size_t>(y) * out.width + x) * c],
                  &in.pixels[(static_cast<size_t>(sy) * W + sx) * c], static_cast<size_t>(c));
    }
  }
  return out;
}

// ---- JPEG ----------------------------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  (*c->err->format_message)(c, e->message);
  std::longjmp(e->jump, 1);
}

// A warning is corrupt or missing data (a truncated file decodes grey): an error here, but
// for stray bytes between markers, which every decoder skips.
void jpeg_message(j_common_ptr c, int level) {
  if (level < 0 && c->err->msg_code != JWRN_EXTRANEOUS_DATA) jpeg_fail(c);
}

Image decode_jpeg(const unsigned char* data, size_t n, const std::string& what) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  Image im;
  std::vector<uint8_t> row;
  int orientation = 1;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_message;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    throw Error(what + ": not a readable JPEG: " + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(n));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&cinfo, TRUE);
  orientation = exif_orientation(cinfo.marker_list);
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const bool adobe_inverted = cmyk && cinfo.saw_Adobe_marker;
  cinfo.out_color_space = cmyk ? JCS_CMYK : cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  const int64_t h = cinfo.image_height, w = cinfo.image_width;
  if (h <= 0 || w <= 0 || h * w > kMaxPixels) {
    jpeg_destroy_decompress(&cinfo);
    check_size(h, w, what);
  }
  jpeg_start_decompress(&cinfo);
  const int comps = cinfo.output_components;
  im.height = static_cast<int>(cinfo.output_height);
  im.width = static_cast<int>(cinfo.output_width);
  im.channels = comps == 1 ? 1 : 3;
  im.pixels.resize(static_cast<size_t>(im.height) * im.width * im.channels);
  row.resize(static_cast<size_t>(im.width) * comps);
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* dst = im.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * im.width * im.channels;
    JSAMPROW rows[1] = {comps == 4 ? row.data() : dst};
    jpeg_read_scanlines(&cinfo, rows, 1);
    if (comps == 4) {  // CMYK to RGB as PIL does; Adobe writes it inverted
      for (int x = 0; x < im.width; ++x) {
        const uint8_t* p = &row[static_cast<size_t>(x) * 4];
        for (int k = 0; k < 3; ++k) {
          const int v = adobe_inverted ? p[k] * p[3] : (255 - p[k]) * (255 - p[3]);
          dst[x * 3 + k] = static_cast<uint8_t>((v + 127) / 255);
        }
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return apply_orientation(std::move(im), orientation);
}

// ---- PNG -----------------------------------------------------------------------------------

struct PngInput {
  const unsigned char* data;
  size_t size, pos;
  char message[256];
};

void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->size - in->pos) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, in->data + in->pos, n);
  in->pos += n;
}

[[noreturn]] void png_fail(png_structp png, png_const_charp msg) {
  auto* in = static_cast<PngInput*>(png_get_error_ptr(png));
  std::snprintf(in->message, sizeof in->message, "%s", msg);
  png_longjmp(png, 1);
}

void png_warn(png_structp, png_const_charp) {}  // ancillary-chunk trouble (e.g. an sRGB profile note)

struct PngHandles {  // destroyed on every path, the error path included
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngHandles() { png_destroy_read_struct(&png, info != nullptr ? &info : nullptr, nullptr); }
};

Image decode_png(const unsigned char* data, size_t n, const std::string& what) {
  PngInput in{data, n, 0, {}};
  PngHandles h;
  Image im;
  std::vector<png_bytep> rows;
  h.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &in, png_fail, png_warn);
  if (h.png != nullptr) h.info = png_create_info_struct(h.png);
  if (h.png == nullptr || h.info == nullptr) throw Error(what + ": libpng could not start");
  if (setjmp(png_jmpbuf(h.png)) != 0) throw Error(what + ": not a readable PNG: " + in.message);
  png_set_read_fn(h.png, &in, png_read_memory);
  png_set_user_limits(h.png, 65535, 65535);
  png_read_info(h.png, h.info);
  const int64_t height = png_get_image_height(h.png, h.info), width = png_get_image_width(h.png, h.info);
  if (height * width > kMaxPixels) png_error(h.png, "more than 2^26 pixels");
  const int type = png_get_color_type(h.png, h.info), depth = png_get_bit_depth(h.png, h.info);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(h.png);
  if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(h.png);
  if (depth == 16) png_set_strip_16(h.png);
  // Alpha is dropped, a palette's transparency (tRNS) too: expanding the palette made it an
  // alpha channel, and every palette PNG with a transparent entry was refused.
  if ((type & PNG_COLOR_MASK_ALPHA) || (type == PNG_COLOR_TYPE_PALETTE && png_get_valid(h.png, h.info, PNG_INFO_tRNS)))
    png_set_strip_alpha(h.png);
  png_set_interlace_handling(h.png);
  png_read_update_info(h.png, h.info);
  im.height = static_cast<int>(height);
  im.width = static_cast<int>(width);
  im.channels = png_get_channels(h.png, h.info);
  if (im.channels != 1 && im.channels != 3) png_error(h.png, "unexpected channel count after conversion");
  const size_t stride = png_get_rowbytes(h.png, h.info);
  if (stride != static_cast<size_t>(im.width) * im.channels) png_error(h.png, "unexpected row size after conversion");
  im.pixels.resize(stride * static_cast<size_t>(im.height));
  rows.resize(static_cast<size_t>(im.height));
  for (int y = 0; y < im.height; ++y) rows[static_cast<size_t>(y)] = im.pixels.data() + stride * static_cast<size_t>(y);
  png_read_image(h.png, rows.data());
  png_read_end(h.png, nullptr);
  return im;
}

}  // namespace

bool looks_like_image(const unsigned char* data, size_t n) { return is_jpeg(data, n) || is_png(data, n); }

Image decode_image(const unsigned char* data, size_t n, const std::string& what) {
  if (is_jpeg(data, n)) return decode_jpeg(data, n, what);
  if (is_png(data, n)) return decode_png(data, n, what);
  throw Error(what + ": neither a JPEG nor a PNG (by its first bytes)");
}

}  // namespace lockstep::io
