# Finds libsamplerate (header samplerate.h, library libsamplerate: Debian libsamplerate0-dev)
# and defines SampleRate::samplerate. The audio importer (io/import/audio_import) resamples
# audio recorded at other rates with it.
find_path(SAMPLERATE_INCLUDE_DIR samplerate.h HINTS ${SAMPLERATE_ROOT} $ENV{SAMPLERATE_ROOT} PATH_SUFFIXES include)
find_library(SAMPLERATE_LIBRARY samplerate HINTS ${SAMPLERATE_ROOT} $ENV{SAMPLERATE_ROOT} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SampleRate DEFAULT_MSG SAMPLERATE_INCLUDE_DIR SAMPLERATE_LIBRARY)
if(SampleRate_FOUND AND NOT TARGET SampleRate::samplerate)
  add_library(SampleRate::samplerate UNKNOWN IMPORTED)
  set_target_properties(SampleRate::samplerate PROPERTIES
    IMPORTED_LOCATION "${SAMPLERATE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SAMPLERATE_INCLUDE_DIR}")
endif()
mark_as_advanced(SAMPLERATE_INCLUDE_DIR SAMPLERATE_LIBRARY)
