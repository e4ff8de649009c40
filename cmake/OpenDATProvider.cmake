# dat_add_provider(): the one call that turns a providers/<name>/ folder into a plugin.
#
#   dat_add_provider(<name>
#     SOURCES <files...>
#     [LIBRARIES <targets or libs...>]
#     [ENTRIES "<ia_name> <u2.0> <threadsafe|nonthreadsafe> <default|nondefault> <ia_params>" ...])
#
# Builds lib<opendat-name>.so into the build tree's provider directory, installs it into
# ${OPENDAT_PROVIDER_INSTALL_DIR}, and records one dat.conf entry per ENTRIES item. conf/
# turns the recorded entries into a build-tree dat.conf (absolute build paths, so tests and
# samples run uninstalled) and the installed dat.conf (absolute install paths).
function(dat_add_provider name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBRARIES;ENTRIES" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "dat_add_provider(${name}): SOURCES is required")
  endif()
  set(target "opendat-${name}")
  add_library(${target} MODULE ${P_SOURCES})
  target_link_libraries(${target} PRIVATE opendat_headers opendat_trace opendat_dense_code
                                          ${P_LIBRARIES})
  # A provider exports only the registry entry points; the version script keeps
  # everything else (including our trace and util copies) private to the plugin.
  set(map "${PROJECT_SOURCE_DIR}/cmake/provider.map")
  target_link_options(${target} PRIVATE "-Wl,--version-script=${map}" "-Wl,-z,now")
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    LIBRARY_OUTPUT_DIRECTORY "${OPENDAT_BUILD_PROVIDER_DIR}"
    LINK_DEPENDS "${map}")
  install(TARGETS ${target} LIBRARY DESTINATION "${OPENDAT_PROVIDER_INSTALL_DIR}" COMPONENT runtime)

  set(file "lib${target}.so")
  foreach(entry IN LISTS P_ENTRIES)
    set_property(GLOBAL APPEND PROPERTY OPENDAT_CONF_ENTRIES "${file}|${entry}")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY OPENDAT_PROVIDERS "${name}")
endfunction()
