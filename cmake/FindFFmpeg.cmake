# Finds FFmpeg's libraries the video importer (io/import/video_decoder) decodes with —
# libavformat, libavcodec, libswscale, libavutil (Debian: libavformat-dev libavcodec-dev
# libswscale-dev) — through pkg-config, and defines FFmpeg::ffmpeg.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(FFMPEG QUIET IMPORTED_TARGET libavformat libavcodec libswscale libavutil)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FFmpeg REQUIRED_VARS FFMPEG_LIBRARIES FFMPEG_FOUND VERSION_VAR FFMPEG_libavcodec_VERSION)
if(FFmpeg_FOUND AND NOT TARGET FFmpeg::ffmpeg)
  add_library(FFmpeg::ffmpeg INTERFACE IMPORTED)
  target_link_libraries(FFmpeg::ffmpeg INTERFACE PkgConfig::FFMPEG)
endif()
