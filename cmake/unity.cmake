# Unity builds that a compiler cache can share between checkouts (.ci/sanitize.sh:
# -DLOCKSTEP_UNITY=ON). Each target's .cpp files are compiled 8 to a translation unit, so the
# precompiled torch header is loaded and torch's templates are instantiated once per batch.
#
# CMake's own unity build (CMAKE_UNITY_BUILD) writes each batch as #includes of absolute paths
# (relative ones need a CMake newer than Debian 12's 3.25: UNITY_BUILD_RELOCATABLE), so a
# clone at another path is another source to ccache and every batch recompiles: a fresh
# clone's ASan build took 299 s with a warm cache, 100 of its ~190 compiles missing
# (2026-11-27). Here a batch includes its sources by their path relative to the batch file
# (searched first, whatever the include directories), so a batch file in a build directory
# inside the clone is the same bytes in every clone, and ccache's base_dir makes the rest
# relative. A source with properties of its own (generated, compile options or definitions,
# no unity or no precompiled header) is compiled on its own, as CMake's unity build would.
# tests/unity_names.py keeps file-local names from colliding within a target.
set(LOCKSTEP_UNITY_BATCH 8)

# The targets defined in DIR and below.
function(lockstep_targets_below dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub ${subdirs})
    lockstep_targets_below(${sub} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Replaces the .cpp sources of every compiled target with batch files under
# ${PROJECT_BINARY_DIR}/unity (written only when their content changes).
function(lockstep_unity_build)
  lockstep_targets_below(${PROJECT_SOURCE_DIR} targets)
  foreach(target ${targets})
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY|MODULE_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    get_target_property(sources ${target} SOURCES)
    get_target_property(source_dir ${target} SOURCE_DIR)
    set(cpp "")
    set(kept "")
    foreach(src ${sources})
      if(src MATCHES "\\.cpp$" AND NOT src MATCHES "^\\$<")
        if(NOT IS_ABSOLUTE ${src})
          set(src ${source_dir}/${src})
        endif()
        set(alone FALSE)
        foreach(prop GENERATED COMPILE_OPTIONS COMPILE_DEFINITIONS SKIP_UNITY_BUILD_INCLUSION SKIP_PRECOMPILE_HEADERS)
          get_source_file_property(value ${src} DIRECTORY ${source_dir} ${prop})
          if(value AND NOT value STREQUAL "NOTFOUND")
            set(alone TRUE)
          endif()
        endforeach()
        if(alone)
          list(APPEND kept ${src})
        else()
          file(RELATIVE_PATH rel ${PROJECT_BINARY_DIR}/unity ${src})
          list(APPEND cpp ${rel})
        endif()
      else()
        list(APPEND kept ${src})
      endif()
    endforeach()
    list(LENGTH cpp n)
    if(n LESS 2)
      continue()
    endif()
    set(batches "")
    set(content "")
    set(in_batch 0)
    set(index 0)
    foreach(rel ${cpp})
      string(APPEND content "#include \"${rel}\"\n")
      math(EXPR in_batch "${in_batch} + 1")
      if(in_batch EQUAL LOCKSTEP_UNITY_BATCH)
        set(file ${PROJECT_BINARY_DIR}/unity/${target}_${index}.cpp)
        file(CONFIGURE OUTPUT ${file} CONTENT "// ${target}, batch ${index} (cmake/unity.cmake)\n${content}" @ONLY)
        list(APPEND batches ${file})
        set(content "")
        set(in_batch 0)
        math(EXPR index "${index} + 1")
      endif()
    endforeach()
    if(in_batch GREATER 0)
      set(file ${PROJECT_BINARY_DIR}/unity/${target}_${index}.cpp)
      file(CONFIGURE OUTPUT ${file} CONTENT "// ${target}, batch ${index} (cmake/unity.cmake)\n${content}" @ONLY)
      list(APPEND batches ${file})
    endif()
    set_property(TARGET ${target} PROPERTY SOURCES ${kept} ${batches})
  endforeach()
endfunction()
