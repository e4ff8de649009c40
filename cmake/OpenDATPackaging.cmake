# Debian package with CPack (docs/packaging.md):
#
#   cmake -S . -B build-deb -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
#         -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc/opendat -DBUILD_TESTING=OFF
#   cmake --build build-deb
#   cpack -G DEB --config build-deb/CPackConfig.cmake -B build-deb/package
#
# One package, "opendat": libdat2.so.2 (+ the libdat2.so link, dat2.pc and the CMake
# package), the providers, the headers, datinfo and its man pages, dat.conf and the sample
# sources.
#
# The package holds exactly what `cmake --install` installs for the prefix chosen at
# configure time: libdat2 has the path of the installed dat.conf (and the relative path
# from its own directory to it) compiled in, and the installed dat.conf names the
# providers by absolute path, so packaging under another prefix than the one configured
# would give a package whose libdat2 looks for its configuration in the wrong place.
# Hence CPACK_PACKAGING_INSTALL_PREFIX = CMAKE_INSTALL_PREFIX and CPACK_SET_DESTDIR (the
# install step writes dat.conf under the real prefix, inside the staging directory).
#
# With the prefix /usr the package owns /usr/lib/<arch>/libdat2.so.2 and /usr/include/dat2,
# which Debian's libdapl2 / libdapl-dev also ship: it conflicts with and replaces them (it
# is ABI-compatible with their libdat2, and DAPL's providers can be listed in OpenDAT's
# dat.conf). Its dat.conf goes to <sysconfdir>/dat.conf; with the recommended
# sysconfdir /etc/opendat that is /etc/opendat/dat.conf, a conffile that leaves DAPL's
# /etc/dat.conf alone (libdat2 still falls back to /etc/dat.conf when its own is missing).

set(OPENDAT_PACKAGE_MAINTAINER "OpenDAT maintainers <opendat@localhost>"
    CACHE STRING "Maintainer field of the Debian package")

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "opendat")
set(CPACK_PACKAGE_VENDOR "OpenDAT")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "DAT 2.0 (uDAPL) library, registry, providers and tools")
set(CPACK_PACKAGE_DESCRIPTION
    "OpenDAT is an implementation of the DAT 2.0 (uDAPL) API: libdat2.so.2 (binary-compatible\n"
    "with OpenFabrics DAPL 2.1.10), its registry (dat.conf / YAML), the tcp and verbs\n"
    "providers, the DAT headers, the datinfo tool and sample programs.")
string(REPLACE ";" "" CPACK_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "${OPENDAT_PACKAGE_MAINTAINER}")

set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
# The whole install (runtime, dev, tools components) in the one package.
set(CPACK_DEB_COMPONENT_INSTALL OFF)

set(CPACK_DEBIAN_PACKAGE_NAME "opendat")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # opendat_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "libs")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${OPENDAT_PACKAGE_MAINTAINER}")

# Depends: computed by dpkg-shlibdeps from the ELF files (libc6, libstdc++6, libgcc-s1,
# libyaml-cpp0.7, and libibverbs1 + librdmacm1 for the verbs provider). The package's own
# libdat2.so.2 is found in the staging directory (PRIVATE_DIRS), never the system's copy
# from libdapl2; the providers' registry symbols are resolved from libdat2 at run time.
find_program(OPENDAT_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(OPENDAT_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CMAKE_BINARY_DIR}/lib")
else()
  # Without dpkg-shlibdeps (not a Debian host): the libraries of Debian 12.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6 (>= 2.34), libstdc++6 (>= 12), libgcc-s1 (>= 3.0), libyaml-cpp0.7 (>= 0.7.0), libibverbs1 (>= 44.0), librdmacm1 (>= 44.0)")
endif()
# A shlibs file for libdat2.so.2.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  # Same files as Debian's DAPL packages: libdat2.so.2, /usr/include/dat2, (maybe) /etc/dat.conf.
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS "libdapl2, libdapl-dev")
  set(CPACK_DEBIAN_PACKAGE_REPLACES "libdapl2, libdapl-dev")
  if(OPENDAT_INSTALLED_CONF STREQUAL "/etc/dat.conf")
    message(STATUS "OpenDAT package: dat.conf goes to /etc/dat.conf (DAPL's file); "
                   "-DCMAKE_INSTALL_SYSCONFDIR=/etc/opendat keeps it apart")
  endif()
endif()

# (GENERATE_SHLIBS also makes CPack write postinst/postrm scripts that run ldconfig.)

# dat.conf is a conffile when it lives under /etc: dpkg keeps the administrator's edits.
if(OPENDAT_INSTALLED_CONF MATCHES "^/etc/")
  set(_conffiles "${CMAKE_BINARY_DIR}/package/control/conffiles")
  file(WRITE "${_conffiles}" "${OPENDAT_INSTALLED_CONF}\n")
  set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${_conffiles}")
endif()

set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}/package")
include(CPack)
