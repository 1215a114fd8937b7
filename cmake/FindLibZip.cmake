# Finds libzip (header zip.h, library libzip: Debian libzip-dev) and defines LibZip::zip.
# (Not Debian's own libzip-config.cmake: it also imports the zipcmp/zipmerge/ziptool
# programs, from packages that are not installed, and fails.) The .npz importer
# (io/import/npy_import) reads zip archives with it.
find_path(LIBZIP_INCLUDE_DIR zip.h HINTS ${LIBZIP_ROOT} $ENV{LIBZIP_ROOT} PATH_SUFFIXES include)
find_library(LIBZIP_LIBRARY zip HINTS ${LIBZIP_ROOT} $ENV{LIBZIP_ROOT} PATH_SUFFIXES lib lib64)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LibZip DEFAULT_MSG LIBZIP_INCLUDE_DIR LIBZIP_LIBRARY)
if(LibZip_FOUND AND NOT TARGET LibZip::zip)
  add_library(LibZip::zip UNKNOWN IMPORTED)
  set_target_properties(LibZip::zip PROPERTIES
    IMPORTED_LOCATION "${LIBZIP_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${LIBZIP_INCLUDE_DIR}")
endif()
mark_as_advanced(LIBZIP_INCLUDE_DIR LIBZIP_LIBRARY)
