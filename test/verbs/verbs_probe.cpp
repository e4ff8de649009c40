// verbs_probe: opens one IA through the DAT API and reports what a consumer sees.
//
//   verbs_probe -P <ia>       open; print "open <ia>: <hex> <major> <minor>"; exit 0 iff it opened
//   verbs_probe -P <ia> -a    also print the IA/provider attributes and check the
//                             provider-specific behaviour (delayed_ack, RMR support),
//                             one "check <name>: ok|FAIL ..." line each; exit 1 on a FAIL
//   verbs_probe -P <ia> -r N  also N rounds of frees racing posts (frees_racing_posts)
#include <dat2/udat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

const char *str(DAT_RETURN rc, bool minor) {
    const char *ma = "", *mi = "";
    dat_strerror(rc, &ma, &mi);
    return minor ? mi : ma;
}

int failures = 0;
void check(const char *name, bool ok, const std::string &detail) {
    std::printf("check %s: %s%s%s\n", name, ok ? "ok" : "FAIL", detail.empty() ? "" : " ",
                detail.c_str());
    if (!ok) ++failures;
}

std::string hex(DAT_RETURN rc) {
    char b[64];
    std::snprintf(b, sizeof b, "0x%x %s %s", rc, str(rc, false), str(rc, true));
    return b;
}

const char *vendor_attr(const DAT_PROVIDER_ATTR &pa, const char *name) {
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; ++i)
        if (std::strcmp(pa.provider_specific_attr[i].name, name) == 0)
            return pa.provider_specific_attr[i].value;
    return nullptr;
}

int attributes(DAT_IA_HANDLE ia) {
    DAT_IA_ATTR a{};
    DAT_PROVIDER_ATTR pa{};
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_RETURN rc = dat_ia_query(ia, &async, DAT_IA_FIELD_ALL, &a, DAT_PROVIDER_FIELD_ALL, &pa);
    check("ia_query", rc == DAT_SUCCESS, hex(rc));
    std::printf("adapter %s | vendor %s | hw %u fw %u.%u\n", a.adapter_name, a.vendor_name,
                a.hardware_version_major, a.firmware_version_major, a.firmware_version_minor);
    std::printf(
        "max_eps %d max_dto_per_ep %d max_evds %d max_evd_qlen %d max_iov %d max_lmrs %d max_pzs "
        "%d\n",
        a.max_eps, a.max_dto_per_ep, a.max_evds, a.max_evd_qlen, a.max_iov_segments_per_dto,
        a.max_lmrs, a.max_pzs);
    std::printf(
        "max_message_size %u max_rdma_size %u max_rmrs %d max_srqs %d rdma_read in/out %d/%d\n",
        a.max_message_size, a.max_rdma_size, a.max_rmrs, a.max_srqs, a.max_rdma_read_per_ep_in,
        a.max_rdma_read_per_ep_out);
    std::printf("provider %s dapl %u.%u thread_safe %d max_private_data %d\n", pa.provider_name,
                pa.dapl_version_major, pa.dapl_version_minor, pa.is_thread_safe,
                pa.max_private_data_size);
    for (DAT_COUNT i = 0; i < pa.num_provider_specific_attr; ++i) {
        const char *n = pa.provider_specific_attr[i].name;
        bool fn = std::strncmp(n, "debug_", 6) == 0;
        std::printf("  %s = %s\n", n, fn ? "<function>" : pa.provider_specific_attr[i].value);
    }
    // Shared receive queues come from the device (ibv_srq): reported as it has them.
    check("max_srqs and srq_supported agree",
          (a.max_srqs > 0) == (pa.srq_supported == DAT_TRUE) &&
              (a.max_srqs == 0 || (a.max_recv_per_srq > 0 && a.max_ep_per_srq > 0)),
          std::to_string(a.max_srqs) + " srqs, " + std::to_string(a.max_recv_per_srq) +
              " receives each");
    check("max_eps from the device", a.max_eps > 0, std::to_string(a.max_eps));
    const char *ext = vendor_attr(pa, "vendor_extension");
    check("vendor_extension 1.0", ext != nullptr && std::strcmp(ext, "1.0") == 0,
          ext != nullptr ? ext : "missing");
    check("vendor_ext_version", vendor_attr(pa, "vendor_ext_version") != nullptr, "");
    check("debug_query/debug_modify",
          vendor_attr(pa, "debug_query") != nullptr && vendor_attr(pa, "debug_modify") != nullptr,
          "");
    const char *da = vendor_attr(pa, "delayed_ack_supported");
    check("delayed_ack_supported present", da != nullptr, da != nullptr ? da : "missing");
    bool delayed = da != nullptr && std::strcmp(da, "true") == 0;

    DAT_PZ_HANDLE pz;
    DAT_EVD_HANDLE evd, conn;
    DAT_EP_HANDLE ep;
    rc = dat_pz_create(ia, &pz);
    check("pz_create", rc == DAT_SUCCESS, hex(rc));
    rc = dat_evd_create(ia, 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &evd);
    check("evd_create dto", rc == DAT_SUCCESS, hex(rc));
    rc = dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn);
    check("evd_create conn", rc == DAT_SUCCESS, hex(rc));
    rc = dat_ep_create(ia, pz, evd, evd, conn, nullptr, &ep);
    check("ep_create", rc == DAT_SUCCESS, hex(rc));
    DAT_EVENT ev;
    rc = dat_evd_dequeue(evd, &ev);
    check("empty DTO EVD dequeue is bare DAT_QUEUE_EMPTY", rc == DAT_QUEUE_EMPTY, hex(rc));
    DAT_COUNT more;
    rc = dat_evd_wait(evd, 0, 1, &ev, &more);
    check("evd_wait timeout 0 expires", DAT_GET_TYPE(rc) == DAT_TIMEOUT_EXPIRED, hex(rc));
    rc = dat_evd_wait(evd, 20000, 1, &ev, &more);
    check("evd_wait 20 ms expires", DAT_GET_TYPE(rc) == DAT_TIMEOUT_EXPIRED, hex(rc));

    DAT_EP_PARAM p{};
    rc = dat_ep_query(ep, DAT_EP_FIELD_ALL, &p);
    std::string v = "missing";
    for (DAT_COUNT i = 0; rc == DAT_SUCCESS && i < p.ep_attr.ep_provider_specific_count; ++i)
        if (std::strcmp(p.ep_attr.ep_provider_specific[i].name, "delayed_ack") == 0)
            v = p.ep_attr.ep_provider_specific[i].value;
    check("EP delayed_ack follows the IA",
          v == (delayed ? "true" : "false") || (!delayed && v == "false"), v);
    DAT_NAMED_ATTR on{"delayed_ack", "true"};
    DAT_EP_PARAM mp{};
    mp.ep_attr.ep_provider_specific_count = 1;
    mp.ep_attr.ep_provider_specific = &on;
    rc = dat_ep_modify(ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &mp);
    if (delayed)
        check("ep_modify delayed_ack=true", rc == DAT_SUCCESS, hex(rc));
    else
        check("ep_modify delayed_ack=true refused", DAT_GET_TYPE(rc) == DAT_MODEL_NOT_SUPPORTED,
              hex(rc));

    std::vector<unsigned char> buf(4096);
    DAT_REGION_DESCRIPTION d;
    d.for_va = buf.data();
    DAT_LMR_HANDLE lmr;
    DAT_LMR_CONTEXT lc;
    DAT_RMR_CONTEXT rcx;
    DAT_VLEN rl;
    DAT_VADDR ra;
    rc = dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, buf.size(), pz, DAT_MEM_PRIV_ALL_FLAG,
                        DAT_VA_TYPE_VA, &lmr, &lc, &rcx, &rl, &ra);
    check("lmr_create", rc == DAT_SUCCESS, hex(rc));
    DAT_RMR_HANDLE rmr = DAT_HANDLE_NULL;
    rc = dat_rmr_create(pz, &rmr);
    if (a.max_rmrs > 0)
        check("rmr_create (device has memory windows)", rc == DAT_SUCCESS, hex(rc));
    else
        check("rmr_create refused (no memory windows)", DAT_GET_TYPE(rc) == DAT_MODEL_NOT_SUPPORTED,
              hex(rc));
    if (rc == DAT_SUCCESS) dat_rmr_free(rmr);
    rc = dat_psp_create(ia, 45999, conn, DAT_PSP_CONSUMER_FLAG, nullptr);
    check("psp_create NULL handle", rc != DAT_SUCCESS, hex(rc));
    DAT_EVD_HANDLE cr;
    dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr);
    DAT_PSP_HANDLE psp1, psp2;
    rc = dat_psp_create(ia, 45999, cr, DAT_PSP_CONSUMER_FLAG, &psp1);
    check("psp_create", rc == DAT_SUCCESS, hex(rc));
    rc = dat_psp_create(ia, 45999, cr, DAT_PSP_CONSUMER_FLAG, &psp2);
    check("psp_create same qualifier twice", DAT_GET_TYPE(rc) == DAT_CONN_QUAL_IN_USE, hex(rc));
    dat_psp_free(psp1);
    check("lmr_free", dat_lmr_free(lmr) == DAT_SUCCESS, "");
    check("ep_free", dat_ep_free(ep) == DAT_SUCCESS, "");
    check("evd_free", dat_evd_free(evd) == DAT_SUCCESS, "");
    dat_evd_free(conn);
    dat_evd_free(cr);
    check("pz_free", dat_pz_free(pz) == DAT_SUCCESS, "");
    return failures;
}

// Frees racing posts. Each round, a thread posts on an EP without pause (receives, or
// sends when the EP takes its receives from an SRQ: every other round) while this thread
// frees the EP and then, at once, everything it used: the SRQ, the LMR, both EVDs, the PZ.
// A post that checked the EP before the free is still on its way into the device: its
// queue pair must outlive it, and what the queue pair was made in (PD, SRQ, CQs) must go
// after it, not be refused by the device (EBUSY) and leaked. Every free must succeed;
// rdma-suite.sh also fails the run on a "(leaked)" trace line in this output.
int frees_racing_posts(DAT_IA_HANDLE ia, int rounds) {
    int bad = 0;
    long posts_total = 0;
    std::vector<unsigned char> buf(4096);
    for (int r = 0; r < rounds && bad < 3; ++r) {
        const bool with_srq = (r & 1) != 0;
        DAT_PZ_HANDLE pz = DAT_HANDLE_NULL;
        DAT_EVD_HANDLE recv = DAT_HANDLE_NULL, req = DAT_HANDLE_NULL;
        DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
        DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
        DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
        DAT_LMR_CONTEXT lc = 0;
        DAT_RMR_CONTEXT rcx = 0;
        DAT_VLEN rl = 0;
        DAT_VADDR ra = 0;
        DAT_REGION_DESCRIPTION d;
        d.for_va = buf.data();
        std::string step = "pz_create";
        DAT_RETURN rc = dat_pz_create(ia, &pz);
        if (rc == DAT_SUCCESS)
            rc = dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, d, buf.size(), pz,
                                DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &lmr, &lc, &rcx, &rl,
                                &ra),
            step = "lmr_create";
        if (rc == DAT_SUCCESS)
            rc = dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &recv),
            step = "evd_create";
        if (rc == DAT_SUCCESS)
            rc = dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &req),
            step = "evd_create";
        if (rc == DAT_SUCCESS && with_srq) {
            DAT_SRQ_ATTR sa{};
            sa.max_recv_dtos = 16;
            sa.max_recv_iov = 1;
            sa.low_watermark = DAT_SRQ_LW_DEFAULT;
            rc = dat_srq_create(ia, pz, &sa, &srq), step = "srq_create";
        }
        if (rc == DAT_SUCCESS)
            rc = with_srq
                     ? dat_ep_create_with_srq(ia, pz, recv, req, DAT_HANDLE_NULL, srq, nullptr, &ep)
                     : dat_ep_create(ia, pz, recv, req, DAT_HANDLE_NULL, nullptr, &ep),
            step = "ep_create";
        if (rc != DAT_SUCCESS) {
            check("frees racing posts: set-up", false,
                  "round " + std::to_string(r) + " " + step + " " + hex(rc));
            return 1;
        }
        std::atomic<long> posts{0};
        std::thread poster([&] {
            DAT_LMR_TRIPLET iov{reinterpret_cast<DAT_VADDR>(buf.data()), 64, lc};
            DAT_DTO_COOKIE cookie{};
            for (;;) {
                DAT_RETURN prc =
                    with_srq ? dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG)
                             : dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
                if (DAT_GET_TYPE(prc) == DAT_INVALID_HANDLE) return;  // the EP is gone
                posts.fetch_add(1);
            }
        });
        while (posts.load() < 20) std::this_thread::yield();
        std::string codes;
        auto note = [&](const char *what, DAT_RETURN frc) {
            if (frc != DAT_SUCCESS) codes += std::string(" ") + what + " " + hex(frc);
        };
        note("ep_free", dat_ep_free(ep));
        if (with_srq) note("srq_free", dat_srq_free(srq));
        note("lmr_free", dat_lmr_free(lmr));
        note("evd_free", dat_evd_free(recv));
        note("evd_free", dat_evd_free(req));
        note("pz_free", dat_pz_free(pz));
        poster.join();
        posts_total += posts.load();
        if (!codes.empty()) {
            check("frees racing posts", false, "round " + std::to_string(r) + ":" + codes);
            ++bad;
        }
    }
    if (bad == 0)
        check("frees racing posts", true,
              std::to_string(rounds) + " rounds, " + std::to_string(posts_total) + " posts");
    return bad;
}

}  // namespace

int main(int argc, char **argv) {
    std::string ia_name;
    bool attrs = false;
    int racing_rounds = 0;
    int c;
    while ((c = getopt(argc, argv, "P:ar:")) != -1) {
        if (c == 'P')
            ia_name = optarg;
        else if (c == 'a')
            attrs = true;
        else if (c == 'r')
            racing_rounds = std::atoi(optarg);
        else
            return 2;
    }
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
    DAT_RETURN rc = dat_ia_open(ia_name.data(), 8, &async, &ia);
    std::printf("open %s: 0x%x %s %s\n", ia_name.c_str(), rc, str(rc, false), str(rc, true));
    std::fflush(stdout);
    if (rc != DAT_SUCCESS) return 1;
    int f = attrs ? attributes(ia) : 0;
    if (racing_rounds > 0) f += frees_racing_posts(ia, racing_rounds);
    rc = dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
    std::printf("close: 0x%x\n", rc);
    return f == 0 && rc == DAT_SUCCESS ? 0 : 1;
}
