# Installation: headers, pkg-config file and the CMake package (find_package(DAT2) -> DAT2::dat).
include(CMakePackageConfigHelpers)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/dat2"
        DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT dev
        FILES_MATCHING PATTERN "*.h")

# pkg-config: `pkg-config --cflags --libs dat2`. Paths are relative to the .pc file itself
# (${pcfiledir}), so `cmake --install --prefix P` or a moved tree still points at itself.
file(RELATIVE_PATH OPENDAT_PC_TO_PREFIX "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
file(RELATIVE_PATH OPENDAT_PC_LIBDIR "${CMAKE_INSTALL_PREFIX}" "${CMAKE_INSTALL_FULL_LIBDIR}")
file(RELATIVE_PATH OPENDAT_PC_INCLUDEDIR "${CMAKE_INSTALL_PREFIX}" "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
string(REGEX REPLACE "/$" "" OPENDAT_PC_TO_PREFIX "${OPENDAT_PC_TO_PREFIX}")
# datconf: where the install step writes dat.conf (conf/CMakeLists.txt), relative to the
# prefix too unless the sysconf directory is absolute or the prefix is /usr (then /etc).
if(IS_ABSOLUTE "${CMAKE_INSTALL_SYSCONFDIR}")
  set(OPENDAT_PC_DATCONF "${CMAKE_INSTALL_SYSCONFDIR}/dat.conf")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(OPENDAT_PC_DATCONF "/etc/dat.conf")
else()
  set(OPENDAT_PC_DATCONF "\${prefix}/${CMAKE_INSTALL_SYSCONFDIR}/dat.conf")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/dat2.pc.in" "${CMAKE_BINARY_DIR}/dat2.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/dat2.pc"
        DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT dev)

# CMake package
set(OPENDAT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/DAT2")
if(TARGET dat2)
  install(EXPORT DAT2Targets NAMESPACE DAT2:: DESTINATION "${OPENDAT_CMAKE_DIR}" COMPONENT dev)
endif()
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/DAT2Config.cmake.in"
  "${CMAKE_BINARY_DIR}/DAT2Config.cmake" INSTALL_DESTINATION "${OPENDAT_CMAKE_DIR}")
write_basic_package_version_file("${CMAKE_BINARY_DIR}/DAT2ConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_BINARY_DIR}/DAT2Config.cmake" "${CMAKE_BINARY_DIR}/DAT2ConfigVersion.cmake"
        DESTINATION "${OPENDAT_CMAKE_DIR}" COMPONENT dev)
