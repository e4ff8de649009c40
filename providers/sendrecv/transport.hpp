// The sendrecv transport: connections and send/recv over TCP stream sockets, nothing else.
#pragma once

#include <memory>

#include "util/objects.hpp"

namespace opendat::sendrecv {

DAT_RETURN make_transport(util::ProviderInstance *inst, util::Ia *ia,
                          std::unique_ptr<util::Transport> *out);

}  // namespace opendat::sendrecv
