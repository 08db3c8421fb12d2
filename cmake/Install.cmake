# grove as an installed package. `cmake --install build --prefix P` puts
#   P/bin/grove                          the command line
#   P/lib/libgrove_runtime.so            the runtime and the C API            (CMake: grove::runtime)
#   P/lib/libgrove_compiler.so           the compiler, for grove_model_compile (CMake: grove::compiler)
#   P/include/grove/grove.h              the C API
#   P/lib/python3/dist-packages/grove/   the Python module, when python/ builds it
#   P/lib/cmake/grove/                   the package config: find_package(grove)
# `grove compile` finds the runtime and the headers at <its folder>/../lib and ../include, so the
# layout is fixed rather than taken from GNUInstallDirs (which may say lib/x86_64-linux-gnu). The
# static libraries are internal and are not installed.

include(CMakePackageConfigHelpers)

set(GROVE_INSTALL_BINDIR bin)
set(GROVE_INSTALL_LIBDIR lib)
set(GROVE_INSTALL_INCLUDEDIR include)
set(GROVE_INSTALL_CMAKEDIR ${GROVE_INSTALL_LIBDIR}/cmake/grove)
set(GROVE_INSTALL_PYTHONDIR ${GROVE_INSTALL_LIBDIR}/python3/dist-packages CACHE STRING
    "Where `cmake --install` puts the Python package grove, relative to the prefix")
# The package's version is the runtime library's: the C API's version is its major number.
get_target_property(GROVE_PACKAGE_VERSION grove_runtime_shared VERSION)

# libgrove_compiler.so: every object of the compiler's libraries (what a whole archive would give),
# for grove_model_compile (JIT). The runtime, and the ILIR and
# dataset code it holds, come from libgrove_runtime.so, linked before the archives: an archive member
# is only pulled in for a symbol nothing before it defines, so the objects in libgrove_runtime.so
# are not copied again and a process holds one of each (one thread team, one error state).
# The Relay back end and front ends (grove_relay_open: backends/runtime/RelayHook.h) are in it too.
set(GROVE_COMPILER_LIBRARIES grove_cpu grove_lowering grove_plan grove_dsl grove_scheduling grove_relay_backend
    grove_relay grove_onnx)
add_library(grove_compiler_shared SHARED)
foreach(library ${GROVE_COMPILER_LIBRARIES})
  target_sources(grove_compiler_shared PRIVATE $<TARGET_OBJECTS:${library}>)
endforeach()
target_link_libraries(grove_compiler_shared PUBLIC grove_runtime_shared PRIVATE ${GROVE_COMPILER_LIBRARIES})
# A consumer calls nothing in libgrove_compiler.so directly (grove_model_compile finds its compiler
# with dlsym), so a linker that drops unused libraries (--as-needed) would leave it out.
target_link_options(grove_compiler_shared INTERFACE "LINKER:--no-as-needed")
set_target_properties(grove_compiler_shared PROPERTIES
  OUTPUT_NAME grove_compiler VERSION ${GROVE_PACKAGE_VERSION} SOVERSION 1 EXPORT_NAME compiler)
set_target_properties(grove_runtime_shared PROPERTIES EXPORT_NAME runtime)
# The names a consumer uses, in this tree too.
add_library(grove::runtime ALIAS grove_runtime_shared)
add_library(grove::compiler ALIAS grove_compiler_shared)

# Installed binaries find grove's libraries relative to themselves: the prefix can move.
set_target_properties(grove PROPERTIES INSTALL_RPATH "$ORIGIN/../${GROVE_INSTALL_LIBDIR}")
set_target_properties(grove_runtime_shared grove_compiler_shared PROPERTIES INSTALL_RPATH "$ORIGIN")

install(TARGETS grove EXPORT groveTargets RUNTIME DESTINATION ${GROVE_INSTALL_BINDIR})
install(TARGETS grove_runtime_shared grove_compiler_shared EXPORT groveTargets
  LIBRARY DESTINATION ${GROVE_INSTALL_LIBDIR} INCLUDES DESTINATION ${GROVE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/grove/grove.h DESTINATION ${GROVE_INSTALL_INCLUDEDIR}/grove)

# The Python module (python/): the extension and the package's Python files. The extension links
# grove statically today; its run path still leads to P/lib, three folders up, for the shared libraries.
if(TARGET _grove AND EXISTS ${CMAKE_SOURCE_DIR}/python/grove)
  set(GROVE_PYTHON_PACKAGE_DIR ${GROVE_INSTALL_PYTHONDIR}/grove)
  set_target_properties(_grove PROPERTIES INSTALL_RPATH "$ORIGIN/../../..")
  install(TARGETS _grove LIBRARY DESTINATION ${GROVE_PYTHON_PACKAGE_DIR})
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/grove/ DESTINATION ${GROVE_PYTHON_PACKAGE_DIR}
    FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
endif()

# find_package(grove): the imported targets grove::runtime, grove::compiler and grove::grove (the
# program, for a consumer's own `grove compile` steps).
install(EXPORT groveTargets NAMESPACE grove:: DESTINATION ${GROVE_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/groveConfig.cmake.in
  ${CMAKE_BINARY_DIR}/groveConfig.cmake INSTALL_DESTINATION ${GROVE_INSTALL_CMAKEDIR}
  PATH_VARS GROVE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/groveConfigVersion.cmake
  VERSION ${GROVE_PACKAGE_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/groveConfig.cmake ${CMAKE_BINARY_DIR}/groveConfigVersion.cmake
  DESTINATION ${GROVE_INSTALL_CMAKEDIR})
