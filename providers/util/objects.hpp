// The IA, endpoint and connection-management objects, and the reports a transport makes
// back to util.
//
// util/ owns the DAT semantics: handle validation, parameter checks, EP states and the
// events that report them, queries. A Transport (util/transport.hpp) owns the wire and
// the device: sockets or queue pairs, connection handshakes, moving bytes, device
// memory and completion queues. The entry points in entries_*.cpp validate, then call
// the Transport; the Transport reports back through the ep_* helpers below, which set
// the EP state and post the DAT events.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "util/ep_mutex.hpp"
#include "util/evd.hpp"
#include "util/memory.hpp"
#include "util/object.hpp"
#include "util/transport.hpp"

namespace opendat::util {

struct Ep;
struct Sp;
struct Cr;
struct Srq;
struct ProviderInstance;

constexpr std::size_t kMaxPrivateData = 256;  // DAT_PROVIDER_ATTR.max_private_data_size

// DAT_PROVIDER_ATTR.provider_specific_attr of one IA, built from its transport's limits
// when it opens (attrs.cpp): two IAs on different devices report their own MTU.
struct SpecificAttrs {
    char mtu[16]{};
    DAT_NAMED_ATTR attrs[16]{};
    int count = 0;
};

struct Ia : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_IA;
    Ia(const DAT_PROVIDER *p, ProviderInstance *inst) : Header(p, kType, this), instance(inst) {}

    DAT_IA_HANDLE consumer_handle() noexcept;  // what the consumer holds for this IA

    ProviderInstance *instance;
    std::unique_ptr<Transport> transport;
    Evd *async_evd = nullptr;
    bool own_async_evd = false;
    MemTable mem;
    // Every child object the consumer created and has not freed (PZ, LMR, RMR, CNO, EVD,
    // EP, PSP, RSP). A graceful dat_ia_close refuses while there are any; an abrupt one
    // frees them through the entry points (close_children, entries_ia.cpp), as the DAT
    // specification asks, so their device resources go with the IA.
    std::atomic<int> objects{0};
    std::mutex children_mu;
    std::unordered_set<Header *> children;
    void adopt(Header *child) noexcept;    // a child was created
    void release(Header *child) noexcept;  // ... and freed
    // Connection requests posted to the consumer and not yet accepted or rejected: an
    // abrupt dat_ia_close hands them back to the transport (cr_destroy), which refuses the
    // peer and frees them, instead of leaking them.
    std::mutex crs_mu;
    std::unordered_set<Cr *> pending_crs;
    // Frees and CR answers under way on the consumer's threads (FreeInFlight): an abrupt
    // dat_ia_close whose claim of a child lost to one of them waits for it to finish
    // before it frees what that child used, and before the transport goes.
    std::atomic<int> frees_in_flight{0};
    SpecificAttrs specific;

  private:
    std::atomic<DAT_IA_HANDLE> consumer_{nullptr};
};

// One dat.conf entry this provider library serves. The DAT_PROVIDER table lives here
// because device_name differs per IA name.
struct ProviderInstance {
    DAT_PROVIDER table{};
    DAT_PROVIDER_INFO info{};
    std::string name;    // IA name (= table.device_name)
    std::string params;  // ia_params from dat.conf
    // Creates the transport for an IA of this instance.
    using MakeTransport = DAT_RETURN (*)(ProviderInstance *inst, Ia *ia,
                                         std::unique_ptr<Transport> *out);
    MakeTransport make_transport = nullptr;
};

struct Ep : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_EP;
    Ep(const DAT_PROVIDER *p, Ia *ia) : Header(p, kType, ia) {}

    // What every post and every placement reads comes first, on the lines of the header
    // (two, with the attributes' limits): cold lines cost a turnaround more than the
    // instructions that read them (docs/benchmarks.md, "What a line costs").
    Pz *pz = nullptr;
    Evd *recv_evd = nullptr;
    Evd *request_evd = nullptr;
    Evd *connect_evd = nullptr;
    Srq *srq = nullptr;    // dat_ep_create_with_srq: receives come from this SRQ (util/srq.hpp)
    void *impl = nullptr;  // the transport's per-EP state
    EpMutex mu;            // guards state, addresses and the connection-event buffer (ep_mutex.hpp)
    DAT_EP_STATE state = DAT_EP_STATE_UNCONNECTED;
    std::atomic<bool> delayed_ack{false};
    DAT_EP_ATTR attr{};
    DAT_NAMED_ATTR provider_attr[1]{};  // {"delayed_ack", "true"/"false"} exposed by ep_query

    sockaddr_storage remote_addr{};
    DAT_CONN_QUAL remote_qual = 0;
    // remote_qual is what the peer listens on (we connected to it); false for an accepted
    // EP, whose remote_qual is only the peer's source port (dat_ep_dup_connect).
    bool remote_qual_listens = false;
    DAT_CONN_QUAL local_qual = 0;
    unsigned char conn_pdata[kMaxPrivateData]{};  // private data of the last connection event
    Header *rsp = nullptr;                        // the RSP reserving this EP, if any
};

// What a PSP and an RSP share, and all a transport needs of either: the qualifier it
// listens on, the EVD its connection requests go to and, for an RSP, the reserved EP.
struct Sp : Header {
    DAT_CONN_QUAL qual = 0;  // psp_create_any: qualifier 0, the transport stores its choice
    Evd *evd = nullptr;
    Ep *ep = nullptr;  // RSP: the reserved EP (a CR's local_ep); PSP: nullptr
    void *impl = nullptr;

  protected:
    Sp(const DAT_PROVIDER *p, DAT_HANDLE_TYPE t, Ia *ia) : Header(p, t, ia) {}
};

struct Psp : Sp {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_PSP;
    Psp(const DAT_PROVIDER *p, Ia *ia) : Sp(p, kType, ia) {}
    DAT_PSP_FLAGS flags = DAT_PSP_CONSUMER_FLAG;
};

struct Rsp : Sp {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_RSP;
    Rsp(const DAT_PROVIDER *p, Ia *ia) : Sp(p, kType, ia) {}
};

// Counts, from the claim (util::claim) until the object is gone, a free or a CR answer
// of one of `ia`'s objects. Begun after the claim so that a thread that lost the claim
// touches nothing of the IA (it may be gone); an abrupt dat_ia_close that lost a claim
// finds the child still listed (released after begin) and then waits for the count.
class FreeInFlight {
  public:
    FreeInFlight() = default;
    explicit FreeInFlight(Ia *ia) noexcept { begin(ia); }
    ~FreeInFlight() {
        if (ia_ != nullptr) ia_->frees_in_flight.fetch_sub(1);
    }
    FreeInFlight(const FreeInFlight &) = delete;
    FreeInFlight &operator=(const FreeInFlight &) = delete;
    void begin(Ia *ia) noexcept {
        ia_ = ia;
        ia_->frees_in_flight.fetch_add(1);
    }

  private:
    Ia *ia_ = nullptr;
};

// A connection request waiting for accept/reject. util allocates it (cr_new) when the
// transport sees a request, and frees it after cr_accept, cr_reject or cr_destroy.
struct Cr : Header {
    static constexpr DAT_HANDLE_TYPE kType = DAT_HANDLE_TYPE_CR;
    Cr(const DAT_PROVIDER *p, Ia *ia) : Header(p, kType, ia) {}
    Sp *sp = nullptr;  // the service point it arrived on (an opaque value once that is freed)
    Ep *local_ep = nullptr;
    // DAT_PSP_PROVIDER_FLAG: the EP the provider made for this request (also local_ep);
    // the consumer's to free, freed here if the request is rejected.
    Ep *provider_ep = nullptr;
    bool wants_provider_ep = false;  // made on first use (provider_ep_for)
    // provider_ep and local_ep once the request wants an EP made: two first looks at once
    // (dat_cr_query, dat_cr_accept with DAT_HANDLE_NULL) make one EP, not two.
    std::mutex provider_ep_mu;
    Header *provider_conn_evd = nullptr;  // the PSP's EVD if it takes connection events
    DAT_CONN_QUAL qual = 0;
    sockaddr_storage remote_addr{};
    DAT_PORT_QUAL remote_port = 0;
    DAT_COUNT pdata_len = 0;
    unsigned char pdata[kMaxPrivateData]{};
    void *impl = nullptr;
};

// A connection request arriving on `sp` (which must be live: the transport holds what
// keeps it so, sp_close waits for it): the CR with sp, qual and local_ep set (for a PSP
// created with DAT_PSP_PROVIDER_FLAG, an EP made for it), or nullptr when out of memory. The
// transport fills the peer's part and offers it with post_cr_arrival.
Cr *cr_new(Sp *sp) noexcept;
// DAT_PSP_PROVIDER_FLAG: makes the EP for `cr` if it wants one and has none yet
// (entries_ep.cpp; consumer's thread). DAT_INVALID_HANDLE once an answer took the
// request, DAT_INSUFFICIENT_RESOURCES when the EP cannot be made.
DAT_RETURN provider_ep_for(Cr *cr) noexcept;
// The EP the provider made for `cr`, or nullptr (read under provider_ep_mu).
Ep *provider_ep_of(Cr *cr) noexcept;
// Before a claimed CR is deleted: waits for a first look that holds provider_ep_mu.
void cr_forget_looks(Cr *cr) noexcept;
// Frees a CR from cr_new that was never offered (the transport failed to set it up).
void cr_discard(Cr *cr) noexcept;

// --- Reports from a transport: EP state transitions and their events -------------------
// The ep_* reports are made with ep->mu held (the transport processes an EP under it).
// Active side got the accept (or passive side finished it): CONNECTED + ESTABLISHED.
void ep_established(Ep *ep, DAT_COUNT pdata_len, const void *pdata) noexcept;
// Connection attempt or connection ended: event_number is one of the
// DAT_CONNECTION_EVENT_* (PEER_REJECTED, NON_PEER_REJECTED, DISCONNECTED, BROKEN,
// TIMED_OUT, UNREACHABLE, ACCEPT_COMPLETION_ERROR). Sets DISCONNECTED.
void ep_connection_ended(Ep *ep, DAT_EVENT_NUMBER event_number, DAT_COUNT pdata_len = 0,
                         const void *pdata = nullptr) noexcept;
// A DTO completion on the EP's request or recv EVD. `solicited`: a receive of a message its
// sender marked solicited (DAT_COMPLETION_SOLICITED_WAIT_FLAG), which ends a solicited-only
// wait (Evd::set_solicited_only); a failed completion always does.
void post_dto(Evd *evd, Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
              DAT_COUNT length, DAT_DTOS op, bool solicited = false) noexcept;
// Its two halves, for completions with more in them (post_ext_dto, extension.cpp): the
// DAT_DTO_COMPLETION_EVENT, and posting one (an overflow is reported on the async EVD).
DAT_EVENT dto_event(Ep *ep, DAT_DTO_COOKIE cookie, DAT_DTO_COMPLETION_STATUS status,
                    DAT_COUNT length, DAT_DTOS op) noexcept;
void post_dto_event(Evd *evd, Ep *ep, const DAT_EVENT &ev, bool solicited = true) noexcept;
// A connection request for `cr` on its service point's EVD. False when it cannot be
// posted (EVD full, no memory): util has then freed the CR and the transport refuses the
// peer.
bool post_cr_arrival(Cr *cr) noexcept;
// An asynchronous error on the IA's async EVD.
void post_async(Ia *ia, DAT_EVENT_NUMBER number, DAT_HANDLE handle) noexcept;
// ... an expected one, with the object kind's reason (DAT_SRQ_LOW_WATERMARK_EVENT, ...).
void post_async(Ia *ia, DAT_EVENT_NUMBER number, DAT_HANDLE handle, DAT_COUNT reason) noexcept;

}  // namespace opendat::util
