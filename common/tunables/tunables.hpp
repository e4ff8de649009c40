// The declared tunables: every environment variable OpenDAT reads, in one typed table
// (name, type, default, range, help), after the model of UCX's documented config tables.
//
// Code reads a variable only through its declaration here (read_int(kTcpConnectRetryMs),
// never getenv("DAT_TCP_CONNECT_RETRY_MS")), `datinfo -e` lists the table with the current
// values and their verdicts, and a test checks docs/configuration.md against it.
//
// A value that is set but invalid is never fatal: the reader writes one trace line that names
// the variable, the value and what is used instead (the default), and goes on.
#pragma once

#include <cstddef>
#include <span>

namespace opendat::tunables {

enum class Type {
    kInt,          // decimal whole number within [min, max]
    kPath,         // a file name (any non-empty string)
    kTraceLevel,   // decimal 0..10
    kTraceDest,    // comma-separated stderr | stdout | syslog | file path
    kTraceSubsys,  // comma-separated trace tags (letters, digits, '.', '_', '-')
    kDebugMask,    // the reference's debug bit mask (decimal, 0x hex, 0 octal)
    kDestMask,     // the reference's destination mask: 1 stdout, 2 syslog, 3 both
    kKeepalive,    // "idle,interval,probes" in seconds (each > 0), or "0" for off
    kChoice,       // one word of Spec::choices; default_value is the default's index
};

struct Spec {
    const char *name;
    Type type;
    const char *reader;             // who reads it: "libdat2", "trace", "tcp", "verbs"
    const char *default_text;       // the default as the docs show it
    long default_value;             // kInt: the default (other types: 0)
    long min, max;                  // kInt: the accepted range (other types: 0, 0)
    const char *help;               // one line: what it does, and when it is read
    const char *choices = nullptr;  // kChoice: the accepted words, comma-separated
};

// Short type name for tables: "int", "path", "level", ...
const char *type_name(Type t) noexcept;

inline constexpr Spec kDatOverride{
    "DAT_OVERRIDE",
    Type::kPath,
    "libdat2",
    "(unset)",
    0,
    0,
    0,
    "configuration file to read instead of the default ones (read when libdat2 loads)"};
inline constexpr Spec kDatTraceLevel{
    "DAT_TRACE_LEVEL",
    Type::kTraceLevel,
    "trace",
    "1",
    1,
    0,
    10,
    "trace level of libdat2's front end and registry (1 errors, 3 normal, 7 detail with "
    "function and line, 10 everything)"};
inline constexpr Spec kDatTraceDest{
    "DAT_TRACE_DEST",
    Type::kTraceDest,
    "trace",
    "stderr",
    0,
    0,
    0,
    "where DAT trace lines go: stderr, stdout, syslog or a file (%p pid, %h host), "
    "comma-separated"};
inline constexpr Spec kDatTraceSubsys{
    "DAT_TRACE_SUBSYS",
    Type::kTraceSubsys,
    "trace",
    "(all)",
    0,
    0,
    0,
    "only these trace tags (e.g. registry,api) above warning level; errors and warnings "
    "always pass"};
inline constexpr Spec kDatDbgType{
    "DAT_DBG_TYPE",
    Type::kDebugMask,
    "trace",
    "(unset)",
    0,
    0,
    0,
    "the reference's debug mask for libdat2; used only when DAT_TRACE_LEVEL is unset"};
inline constexpr Spec kDatDbgDest{
    "DAT_DBG_DEST",
    Type::kDestMask,
    "trace",
    "(unset)",
    0,
    0,
    0,
    "the reference's destination mask for libdat2 (1 stdout, 2 syslog, 3 both); used only "
    "when DAT_TRACE_DEST is unset"};
inline constexpr Spec kDaplTraceLevel{
    "DAPL_TRACE_LEVEL",
    Type::kTraceLevel,
    "trace",
    "1",
    1,
    0,
    10,
    "trace level of the providers (a YAML entry's trace_level sets it when unset; 10 traces "
    "every tcp frame)"};
inline constexpr Spec kDaplTraceDest{
    "DAPL_TRACE_DEST",
    Type::kTraceDest,
    "trace",
    "stderr",
    0,
    0,
    0,
    "where provider trace lines go: stderr, stdout, syslog or a file, comma-separated"};
inline constexpr Spec kDaplTraceSubsys{
    "DAPL_TRACE_SUBSYS",
    Type::kTraceSubsys,
    "trace",
    "(all)",
    0,
    0,
    0,
    "only these provider trace tags (e.g. tcp,ia; tcp also selects tcp.frame) above warning "
    "level; errors and warnings always pass"};
inline constexpr Spec kDaplDbgType{
    "DAPL_DBG_TYPE",
    Type::kDebugMask,
    "trace",
    "(unset)",
    0,
    0,
    0,
    "the reference's debug mask for the providers; used only when DAPL_TRACE_LEVEL is unset"};
inline constexpr Spec kDaplDbgDest{
    "DAPL_DBG_DEST",
    Type::kDestMask,
    "trace",
    "(unset)",
    0,
    0,
    0,
    "the reference's destination mask for the providers (1 stdout, 2 syslog, 3 both); used "
    "only when DAPL_TRACE_DEST is unset"};
inline constexpr Spec kTcpKeepalive{
    "DAT_TCP_KEEPALIVE",
    Type::kKeepalive,
    "tcp",
    "10,2,5",
    0,
    0,
    0,
    "dead-peer keepalive \"idle,interval,probes\" in seconds, \"0\" turns it off (read when "
    "an IA opens)"};
inline constexpr Spec kTcpUserTimeoutMs{
    "DAT_TCP_USER_TIMEOUT_MS",
    Type::kInt,
    "tcp",
    "0",
    0,
    0,
    2147483647,
    "TCP_USER_TIMEOUT: how long sent data may stay unacknowledged before the connection is "
    "broken (0: the kernel's default; read when an IA opens)"};
inline constexpr Spec kTcpConnectRetryMs{
    "DAT_TCP_CONNECT_RETRY_MS",
    Type::kInt,
    "tcp",
    "3000",
    3000,
    0,
    600000,
    "how long a refused connect is retried (every 20 ms, within the connect timeout) before "
    "it is reported as rejected (read once)"};
inline constexpr Spec kVerbsMaxInline{
    "OPENDAT_VERBS_MAX_INLINE",
    Type::kInt,
    "verbs",
    "0",
    0,
    0,
    65536,
    "send inline up to this many bytes (0: off, so a bad lmr_context is always reported as a "
    "local protection error; read once)"};

inline constexpr Spec kTcpProgress{
    "DAT_TCP_PROGRESS",
    Type::kChoice,
    "tcp",
    "adaptive",
    0,
    0,
    0,
    "how the progress thread waits: adaptive polls for DAT_TCP_SPIN_US after activity, then "
    "sleeps; busy never sleeps (a dedicated core); sleep sleeps at once (read when an IA opens)",
    "adaptive,busy,sleep"};
inline constexpr Spec kTcpSpinUs{
    "DAT_TCP_SPIN_US",
    Type::kInt,
    "tcp",
    "50",
    50,
    0,
    1000000,
    "adaptive progress: microseconds the progress thread keeps polling after its last event "
    "(read when an IA opens)"};
inline constexpr Spec kTcpWaitSpinUs{
    "DAT_TCP_WAIT_SPIN_US",
    Type::kInt,
    "tcp",
    "50",
    50,
    0,
    1000000,
    "microseconds dat_evd_wait on a DTO EVD runs the progress on the caller's thread before "
    "it sleeps (read when an IA opens)"};
inline constexpr Spec kTcpWaitSleep{
    "DAT_TCP_WAIT_SLEEP",
    Type::kChoice,
    "tcp",
    "epoll",
    0,
    0,
    0,
    "where dat_evd_wait on a DTO EVD sleeps after its spin: epoll sleeps in the IA's own "
    "epoll_wait and receives on the caller's thread (one wake-up per message, as a blocking "
    "recv); cv sleeps on the EVD and the progress thread wakes it (read when an IA opens)",
    "epoll,cv"};
inline constexpr Spec kTcpTxBatch{
    "DAT_TCP_TX_BATCH",
    Type::kInt,
    "tcp",
    "64",
    64,
    1,
    128,
    "frames one sendmsg may carry when several are queued on a connection (a batch stops at "
    "128 KiB); 1 sends each frame with its own system call (read when an IA opens)"};
inline constexpr Spec kTcpTxBurstGapNs{
    "DAT_TCP_TX_BURST_GAP_NS",
    Type::kInt,
    "tcp",
    "0",
    0,
    0,
    1000000,
    "a request posted within this many nanoseconds of the previous one, while earlier ones "
    "are outstanding, is a burst and leaves with the next batch; 0 (default) measures it: "
    "three empty system calls' time, within 1000..20000 (read when an IA opens)"};
inline constexpr Spec kTcpCorkWrites{
    "DAT_TCP_CORK_WRITES",
    Type::kChoice,
    "tcp",
    "on",
    0,
    0,
    0,
    "on: once a connection's RDMA writes were each followed at once by another post (a "
    "write, then its notification), its next small write waits in the socket (MSG_MORE) for "
    "that post and both leave in one segment; a write no post follows goes at the "
    "application's next DAT progress call, else after DAT_TCP_CORK_HOLD_MS; off: every "
    "write leaves at once (read when an IA opens)",
    "on,off"};
inline constexpr Spec kTcpCorkHoldMs{
    "DAT_TCP_CORK_HOLD_MS",
    Type::kInt,
    "tcp",
    "2",
    2,
    0,
    1000,
    "DAT_TCP_CORK_WRITES: milliseconds a held write may wait for the post that should follow "
    "it before the progress thread sends it (a write nothing follows, and no DAT call); 0: "
    "no limit, it waits for the application's next DAT progress call or the kernel (about "
    "200 ms) (read when an IA opens)"};
inline constexpr Spec kTcpWireVersion{
    "DAT_TCP_WIRE_VERSION",
    Type::kInt,
    "tcp",
    "2",
    2,
    1,
    2,
    "the highest tcp wire version this side offers (1 speaks exactly as a version-1 peer, "
    "e.g. during a rolling upgrade; read when an IA opens)"};

inline constexpr Spec kTcpIpv4Sockets{
    "DAT_TCP_IPV4_SOCKETS",
    Type::kChoice,
    "tcp",
    "inet",
    0,
    0,
    0,
    "the sockets of an IPv4 IA: inet (AF_INET, default) or mapped (AF_INET6 sockets with "
    "IPv4-mapped addresses, the same IPv4 on the wire, faster on some kernels; inet where this "
    "host has no IPv6 sockets); peers may differ (read when an IA opens)",
    "inet,mapped"};

inline constexpr Spec kTcpHandshakeMs{
    "DAT_TCP_HANDSHAKE_MS",
    Type::kInt,
    "tcp",
    "5000",
    5000,
    1,
    3600000,
    "a passive connection must deliver its connection request within this time, else it is closed "
    "(read when an IA opens)"};
inline constexpr Spec kTcpMaxPending{
    "DAT_TCP_MAX_PENDING",
    Type::kInt,
    "tcp",
    "64",
    64,
    1,
    65536,
    "passive connections per listener still waiting for their request; beyond it the oldest one at "
    "least 0.5 s old is dropped (read when an IA opens)"};
inline constexpr Spec kTcpCloseMs{
    "DAT_TCP_CLOSE_MS",
    Type::kInt,
    "tcp",
    "5000",
    5000,
    1,
    3600000,
    "a graceful dat_ep_disconnect waits this long for the peer's end, and a peer that ended its "
    "stream this long for the answers it asked for to leave or for a receive its waiting message "
    "needs, then the connection closes anyway (read when an IA opens)"};
inline constexpr Spec kTcpConnectAnswerMs{
    "DAT_TCP_CONNECT_ANSWER_MS",
    Type::kInt,
    "tcp",
    "60000",
    60000,
    1,
    86400000,
    "a dat_ep_connect with DAT_TIMEOUT_INFINITE waits this long for the peer's accept or reject "
    "once its socket connected, then times out, as an IB connection request does (read when an IA "
    "opens)"};
inline constexpr Spec kTcpDrainMs{
    "DAT_TCP_DRAIN_MS",
    Type::kInt,
    "tcp",
    "1000",
    1000,
    1,
    3600000,
    "after a remote access violation the peer's frames are drained this long before the connection "
    "is broken (read when an IA opens)"};
inline constexpr Spec kTcpAcceptBackoffMs{
    "DAT_TCP_ACCEPT_BACKOFF_MS",
    Type::kInt,
    "tcp",
    "100",
    100,
    1,
    60000,
    "out of file descriptors at accept and nothing to drop: the listener pauses this long (read "
    "when an IA opens)"};

// Every declared tunable, in the order the docs list them.
std::span<const Spec *const> all() noexcept;
// The declaration of `name`, or nullptr.
const Spec *find(const char *name) noexcept;

// Judges `value` for `spec`. True if the readers use it as given; otherwise false and `why`
// (if not null) says what is wrong, e.g. "not a whole number" or "outside 0..600000".
bool check(const Spec &spec, const char *value, char *why, std::size_t why_size) noexcept;

struct Keepalive {
    bool on = true;
    int idle = 10, interval = 2, probes = 5;
};
// Strict parse of a kKeepalive value. False for anything but "0" or three positive numbers.
bool parse_keepalive(const char *value, Keepalive *out) noexcept;
// Strict parse of a kInt value within [spec.min, spec.max].
bool parse_int(const Spec &spec, const char *value, long *out) noexcept;
// The index in spec.choices of `value` (a kChoice tunable), or -1.
int choice_index(const Spec &spec, const char *value) noexcept;

// Readers (provider side: a rejected value is traced as a DAPL warning, tag "tunables").
// The value of a kInt tunable: the environment's if valid, else the default.
long read_int(const Spec &spec) noexcept;
// The value of a kKeepalive tunable: the environment's if valid, else the default.
Keepalive read_keepalive(const Spec &spec) noexcept;
// The index in spec.choices of a kChoice tunable's value: the environment's if valid, else
// the default's.
int read_choice(const Spec &spec) noexcept;

}  // namespace opendat::tunables
