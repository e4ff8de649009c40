// The plugin's two exported entry points (see cmake/provider.map).
#include "sendrecv/transport.hpp"
#include "util/provider_table.hpp"

OPENDAT_PROVIDER_ENTRY_POINTS(&opendat::sendrecv::make_transport)
