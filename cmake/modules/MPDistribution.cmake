#===- MPDistribution.cmake - the relocatable distribution's build ---------===#
#
# Included by the top level when MP_DISTRIBUTION is on: the configuration
# `utils/mp dist` builds, installs and packs (docs/Install.md).
#
# - LLVM comes from Debian's static component libraries instead of the
#   shared libLLVM.so.22.1 (150 MB, which brings ICU, libxml2, z3, libedit
#   and libffi with it). Debian's MLIR libraries are static but name the
#   shared library in their link interfaces; the name is replaced by the
#   static components here. The linker takes from them only what mp calls.
# - The tools' code is one shared library (tools/libmp), so that LLVM and
#   MLIR are in the package once.
# - Every binary finds its libraries relative to itself: DT_RPATH
#   $ORIGIN/../lib (executables) and $ORIGIN (libraries). DT_RPATH rather
#   than DT_RUNPATH, so that LD_LIBRARY_PATH cannot swap a carried library
#   for another version.
# - mp_install_runtime_dependencies copies the shared libraries the
#   installed binaries need, apart from glibc's own, into lib/, and sets
#   their DT_RPATH to $ORIGIN with patchelf (as auditwheel does for Python
#   wheels): each resolves its own dependencies there, also when a program
#   of the user's (an mp-compile step, say) links them.
#
#===------------------------------------------------------------------------===#

find_program(MP_PATCHELF patchelf)
if(NOT MP_PATCHELF)
  message(FATAL_ERROR "mp: the distribution needs patchelf (utils/mp setup "
    "installs it)")
endif()

set(LLVM_LINK_LLVM_DYLIB OFF)
# What MLIR's libraries in mp's link closure use from LLVM (the JIT with
# the perf listener MLIR's ExecutionEngine creates, the optimisation
# pipeline, the native code generator, LLVM IR translation); the
# components' own link interfaces bring their dependencies.
llvm_map_components_to_libnames(MP_STATIC_LLVM_LIBS
  Core FrontendOpenMP IRReader MC native OrcJIT Passes PerfJITEvents Support
  Target)

# z3 serves LLVM's SMT-based analyses, which mp never reaches: leave the
# shared libz3 out, so that a reference to it fails the link instead of
# quietly adding a dependency.
if(TARGET LLVMSupport)
  get_target_property(mp_support_libs LLVMSupport INTERFACE_LINK_LIBRARIES)
  list(FILTER mp_support_libs EXCLUDE REGEX "z3")
  set_target_properties(LLVMSupport PROPERTIES
    INTERFACE_LINK_LIBRARIES "${mp_support_libs}")
endif()

foreach(mp_target ${MLIR_EXPORTED_TARGETS})
  if(NOT TARGET ${mp_target})
    continue()
  endif()
  get_target_property(mp_libs ${mp_target} INTERFACE_LINK_LIBRARIES)
  if(NOT mp_libs)
    continue()
  endif()
  set(mp_new_libs)
  set(mp_changed OFF)
  foreach(mp_lib ${mp_libs})
    if(mp_lib STREQUAL "LLVM" OR mp_lib STREQUAL "$<LINK_ONLY:LLVM>")
      list(APPEND mp_new_libs ${MP_STATIC_LLVM_LIBS})
      set(mp_changed ON)
    elseif(mp_lib STREQUAL "MLIR")
      # The shared libMLIR.so: mp links MLIR's static libraries.
      set(mp_changed ON)
    else()
      list(APPEND mp_new_libs ${mp_lib})
    endif()
  endforeach()
  if(mp_changed)
    list(REMOVE_DUPLICATES mp_new_libs)
    set_target_properties(${mp_target} PROPERTIES
      INTERFACE_LINK_LIBRARIES "${mp_new_libs}")
  endif()
endforeach()

# Unused shared libraries named on a link line (zlib where nothing
# compresses, say) do not become dependencies.
string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,--as-needed -Wl,--disable-new-dtags")
string(APPEND CMAKE_SHARED_LINKER_FLAGS " -Wl,--as-needed -Wl,--disable-new-dtags")
set(CMAKE_BUILD_WITH_INSTALL_RPATH ON)
set(CMAKE_INSTALL_RPATH "\$ORIGIN/../lib")
set(MP_LIBRARY_RPATH "\$ORIGIN")

# At `cmake --install` time: copies the shared libraries the installed
# FILES load (recursively), apart from glibc's and the NVIDIA driver's, into
# lib/ under their sonames, and the Debian copyright file of every package
# the distribution takes code from (those libraries, and the packages that
# own NOTICES: files of what is linked statically or carried as source) into
# share/doc/mp/third-party/.
function(mp_install_runtime_dependencies)
  cmake_parse_arguments(ARG "" "" "FILES;NOTICES" ${ARGN})
  install(CODE "
    set(mp_files)
    foreach(f ${ARG_FILES})
      list(APPEND mp_files \"\${CMAKE_INSTALL_PREFIX}/\${f}\")
    endforeach()
    file(GET_RUNTIME_DEPENDENCIES
      EXECUTABLES \${mp_files}
      RESOLVED_DEPENDENCIES_VAR mp_resolved
      UNRESOLVED_DEPENDENCIES_VAR mp_unresolved
      DIRECTORIES \"\${CMAKE_INSTALL_PREFIX}/lib\"
      PRE_EXCLUDE_REGEXES
        \"^ld-linux\" \"^libc\\\\.so\" \"^libm\\\\.so\" \"^libdl\\\\.so\"
        \"^librt\\\\.so\" \"^libpthread\\\\.so\" \"^libresolv\\\\.so\"
        \"^libcuda\\\\.so\" \"^linux-vdso\")
    if(mp_unresolved)
      message(FATAL_ERROR \"mp: unresolved libraries: \${mp_unresolved}\")
    endif()
    set(mp_owned ${ARG_NOTICES})
    file(MAKE_DIRECTORY \"\${CMAKE_INSTALL_PREFIX}/share/doc/mp/third-party\")
    foreach(mp_lib \${mp_resolved})
      get_filename_component(mp_name \"\${mp_lib}\" NAME)
      file(REAL_PATH \"\${mp_lib}\" mp_real)
      if(mp_real MATCHES \"^\${CMAKE_INSTALL_PREFIX}/\")
        continue() # the distribution's own
      endif()
      file(COPY_FILE \"\${mp_real}\" \"\${CMAKE_INSTALL_PREFIX}/lib/\${mp_name}\")
      execute_process(COMMAND ${MP_PATCHELF} --force-rpath --set-rpath
          \"\\\$ORIGIN\" \"\${CMAKE_INSTALL_PREFIX}/lib/\${mp_name}\"
        RESULT_VARIABLE mp_status)
      if(NOT mp_status EQUAL 0)
        message(FATAL_ERROR \"mp: patchelf failed on lib/\${mp_name}\")
      endif()
      message(STATUS \"Carried: \${mp_real} as lib/\${mp_name}\")
      list(APPEND mp_owned \"\${mp_real}\")
    endforeach()
    foreach(mp_path \${mp_owned})
      # dpkg knows a file by the path its package installed it at, which
      # may be /lib/... where the file is /usr/lib/... (merged /usr).
      set(mp_package)
      string(REGEX REPLACE \"^/usr/lib/\" \"/lib/\" mp_unmerged \"\${mp_path}\")
      foreach(mp_try \"\${mp_path}\" \"\${mp_unmerged}\")
        execute_process(COMMAND dpkg -S \"\${mp_try}\"
          OUTPUT_VARIABLE mp_owner RESULT_VARIABLE mp_status ERROR_QUIET)
        if(mp_status EQUAL 0)
          string(REGEX REPLACE \"[:,].*\" \"\" mp_package \"\${mp_owner}\")
          break()
        endif()
      endforeach()
      if(NOT mp_package)
        message(FATAL_ERROR \"mp: no Debian package owns \${mp_path}, so its \"
          \"licence cannot be carried\")
      endif()
      file(COPY_FILE /usr/share/doc/\${mp_package}/copyright
        \"\${CMAKE_INSTALL_PREFIX}/share/doc/mp/third-party/\${mp_package}.copyright\")
    endforeach()
  ")
endfunction()
