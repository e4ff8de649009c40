// Device objects whose destruction waits for util's grace periods (util/grace.hpp).
//
// A dat_ep_post_* that checked its EP before a dat_ep_free on another thread may still be
// on its way into ibv_post_send: the queue pair must outlive it, as util's EP does. And
// once a queue pair waits, so must what it holds: a protection domain or shared receive
// queue destroyed while a queue pair made in it lives is refused (EBUSY) and leaked.
// grace runs deletions in the order they were retired, and a DAT free can only follow the
// frees of what uses its object (util's use counts), so retiring all three keeps the
// device's order: queue pairs, then shared receive queues, then protection domains. (A
// completion queue goes with its EVD, which util retires the same way.)
//
// Memory regions and windows are not retired: dat_lmr_free promises that no access,
// local or remote, reaches the memory once it returns, and nothing the device holds
// depends on them.
//
// Only for frees while the device runs: a transport's teardown (after grace::synchronize)
// destroys what is left at once, before it closes the device.
#pragma once

#include <infiniband/verbs.h>

namespace opendat::verbs {

// A queue pair dat_ep_modify replaced, under the EP's lock: destroyed on the way out of
// the call at the earliest (grace::retire_after_call), never under that lock, since
// destroying a queue pair may wait for the connection thread, which may wait for it.
// (dat_ep_free retires its EP's last one through the EpImpl, so that impl->qp itself stays
// unchanged for the posts in flight.)
void retire_replaced_qp(ibv_qp *qp) noexcept;
void retire_srq(ibv_srq *srq) noexcept;
void retire_pd(ibv_pd *pd) noexcept;

}  // namespace opendat::verbs
