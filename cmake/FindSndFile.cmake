# Finds libsndfile (header sndfile.h, library libsndfile: Debian libsndfile1-dev) and
# defines SndFile::sndfile. The audio importer (io/import/audio_import) reads WAVs with it.
find_path(SNDFILE_INCLUDE_DIR sndfile.h HINTS ${SNDFILE_ROOT} $ENV{SNDFILE_ROOT} PATH_SUFFIXES include)
find_library(SNDFILE_LIBRARY sndfile HINTS ${SNDFILE_ROOT} $ENV{SNDFILE_ROOT} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SndFile DEFAULT_MSG SNDFILE_INCLUDE_DIR SNDFILE_LIBRARY)
if(SndFile_FOUND AND NOT TARGET SndFile::sndfile)
  add_library(SndFile::sndfile UNKNOWN IMPORTED)
  set_target_properties(SndFile::sndfile PROPERTIES
    IMPORTED_LOCATION "${SNDFILE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SNDFILE_INCLUDE_DIR}")
endif()
mark_as_advanced(SNDFILE_INCLUDE_DIR SNDFILE_LIBRARY)
