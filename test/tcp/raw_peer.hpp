// A peer that speaks the tcp provider's wire format from a raw socket, for the attack tests
// (attack_test.cpp): it sends what an honest provider would never send, or stops in the
// middle. Frame headers come from providers/tcp/wire.hpp (make_header and the opcodes), so
// the tests follow the header if it changes.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "tcp/wire.hpp"

namespace attack {

using opendat::tcp::FrameHeader;

// Blocking TCP connection to addr:port; rcvbuf > 0 shrinks the receive buffer first (a
// peer that stops reading then stalls the sender sooner). -1 on failure.
int connect_tcp(in_addr addr, std::uint16_t port, int rcvbuf = 0);
// A listening socket on addr, any port (*port set). -1 on failure.
int listen_tcp(in_addr addr, std::uint16_t *port);

bool send_all(int fd, const void *p, std::size_t n);
// Reads exactly n bytes within timeout_ms; false on EOF, error or timeout.
bool recv_all(int fd, void *p, std::size_t n, int timeout_ms = 10000);
// Waits until the peer closed the connection (EOF or reset), discarding what arrives;
// false if it is still open after timeout_ms. *bytes (optional) counts what was read.
bool wait_closed(int fd, int timeout_ms, std::size_t *bytes = nullptr);

// Active side: CONN_REQ, then the CONN_ACC (false if anything else comes). The first form
// sends what version 1 sends; the second announces `terms` (version, capability bits).
bool send_conn_req(int fd);
bool send_conn_req(int fd, opendat::tcp::WireTerms terms);
bool expect_conn_acc(int fd);
// Passive side: reads a CONN_REQ (and its private data), answers CONN_ACC.
bool answer_conn_req(int fd);

// CPU time (user + system, all threads) a process has used so far, in seconds.
double cpu_seconds(pid_t pid);

}  // namespace attack
