# opendat_vm_share_args(<out-var>): the run-in-vm.sh options that make the source tree and the
# build tree visible inside the soft-RoCE VM at their host paths.
#
# The guest sees the host's / read-only, but with fresh tmpfs on /tmp and /run: a checkout or
# build under /tmp (CI clones often live there) would be hidden without these shares. The
# build tree is shared read-write so that results land on the host; it is not shared twice
# when it lies inside the source tree.
function(opendat_vm_share_args out)
  set(args --share "${PROJECT_SOURCE_DIR}")
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${CMAKE_BINARY_DIR}")
  if(rel MATCHES "^\\.\\./" OR IS_ABSOLUTE "${rel}")
    list(APPEND args --share "${CMAKE_BINARY_DIR}")
  endif()
  set(${out} ${args} PARENT_SCOPE)
endfunction()
