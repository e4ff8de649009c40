// The plugin's two exported entry points (see cmake/provider.map).
#include "util/provider_table.hpp"
#include "verbs/transport.hpp"

OPENDAT_PROVIDER_ENTRY_POINTS(&opendat::verbs::make_transport)
