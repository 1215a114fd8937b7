# Writes OUT (core/base/version.hpp) from IN with the project version and the git commit of
# SOURCE_DIR, at build time, and only when its text changes: an incremental build after a
# new commit reports the new commit without rebuilding anything else.
execute_process(COMMAND git -C ${SOURCE_DIR} rev-parse --short=10 HEAD OUTPUT_VARIABLE LOCKSTEP_GIT_COMMIT
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR LOCKSTEP_GIT_COMMIT STREQUAL "")
  set(LOCKSTEP_GIT_COMMIT unknown)
endif()
execute_process(COMMAND git -C ${SOURCE_DIR} status --porcelain --untracked-files=no OUTPUT_VARIABLE dirty
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT dirty STREQUAL "")
  set(LOCKSTEP_GIT_COMMIT "${LOCKSTEP_GIT_COMMIT}-dirty")
endif()
configure_file(${IN} ${OUT}.new @ONLY)
file(COPY_FILE ${OUT}.new ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.new)
