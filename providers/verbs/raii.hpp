// Owning handles for every rdma-core resource the provider creates. Each verbs/rdma_cm
// object is released exactly once, by its owner's destructor, in the reverse order of
// creation (members are declared in creation order for that reason).
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

#include <memory>

namespace opendat::verbs {

struct ChannelDel {
    void operator()(rdma_event_channel *c) const noexcept { rdma_destroy_event_channel(c); }
};
struct IdDel {
    void operator()(rdma_cm_id *id) const noexcept { rdma_destroy_id(id); }
};
// A queue or completion queue the device refuses to destroy (EBUSY: something made on it
// still lives) is leaked: said, since nothing else would tell.
void trace_destroy_failure(int rc, const char *call) noexcept;

struct CqDel {
    void operator()(ibv_cq *cq) const noexcept {
        if (int rc = ibv_destroy_cq(cq); rc != 0) trace_destroy_failure(rc, "ibv_destroy_cq");
    }
};
struct CompChannelDel {
    void operator()(ibv_comp_channel *c) const noexcept { ibv_destroy_comp_channel(c); }
};
struct QpDel {
    void operator()(ibv_qp *qp) const noexcept {
        if (int rc = ibv_destroy_qp(qp); rc != 0) trace_destroy_failure(rc, "ibv_destroy_qp");
    }
};

using ChannelPtr = std::unique_ptr<rdma_event_channel, ChannelDel>;
using IdPtr = std::unique_ptr<rdma_cm_id, IdDel>;
using CqPtr = std::unique_ptr<ibv_cq, CqDel>;
using CompChannelPtr = std::unique_ptr<ibv_comp_channel, CompChannelDel>;
using QpPtr = std::unique_ptr<ibv_qp, QpDel>;

// A plain file descriptor (eventfd).
class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) noexcept : fd_(fd) {}
    ~UniqueFd() {
        if (fd_ >= 0) ::close(fd_);
    }
    UniqueFd(const UniqueFd &) = delete;
    UniqueFd &operator=(const UniqueFd &) = delete;
    int get() const noexcept { return fd_; }
    void reset(int fd) noexcept {
        if (fd_ >= 0) ::close(fd_);
        fd_ = fd;
    }

  private:
    int fd_ = -1;
};

}  // namespace opendat::verbs
