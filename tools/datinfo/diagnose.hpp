// Why an IA could not be opened, and what to do about it.
#pragma once

#include "document.hpp"

#include "registry/registry.hpp"

#include <dat2/udat.h>

#include <optional>
#include <string>
#include <vector>

namespace datinfo {

struct Diagnosis {
    // Machine-readable: library_not_found, library_load_error, entry_point_missing,
    // registered_nothing, interface_not_present, address_not_present, device_not_present,
    // no_rdma_devices, memlock_too_small, provider_error.
    std::string cause;
    std::string detail;              // one sentence for people
    std::vector<std::string> fixes;  // what to do about it
};

// "DAT_INVALID_ADDRESS" / "DAT_PROVIDER_NOT_FOUND DAT_NAME_NOT_REGISTERED", via dat_strerror.
std::string decode_dat_return(DAT_RETURN rc);
std::string hex_code(DAT_RETURN rc);

// libdat2_dir: where libdat2 lives, for the registry's <dir>/opendat/<name> fallback.
Diagnosis diagnose_open_failure(const opendat::registry::ConfigEntry &e, DAT_RETURN rc,
                                const std::string &libdat2_dir);

// Verbs-based providers pin memory: Debian's DAPL libraries, or ia_params naming an RDMA device.
bool is_verbs_provider(const opendat::registry::ConfigEntry &e);

// A warning (and how to raise the limit) when RLIMIT_MEMLOCK is too small for RDMA.
std::optional<Diagnosis> memlock_warning();

Node diagnosis_node(const Diagnosis &d);

}  // namespace datinfo
