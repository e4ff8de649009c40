#!/usr/bin/env python3
"""Writes the tcp_wire fuzzer's seed inputs into corpus/tcp_wire/ (see tcp_wire_fuzzer.cpp
for the input layout). Frame values follow providers/tcp/wire.hpp; if the wire format
changes, the fuzzer still works (it builds headers with make_header) and these seeds only
become less useful: update the constants below and re-run this script."""
import os
import struct

MAGIC, VERSION = 0x3154444F, 1
CONN_REQ, SEND, WRITE, READ_REQ, READ_RESP, ACK, NAK, DISC = 1, 4, 5, 6, 7, 8, 9, 10
HANDSHAKE, REJECT, FRAMED, HALF_CLOSE, ACTIVE = 1, 2, 4, 8, 16


def header(op, length, seq=0, addr=0, rkey=0, aux=0, flags=0):  # FrameHeader, 32 bytes
    return struct.pack("<IBBHIIQII", MAGIC, VERSION, op, flags, length, seq, addr, rkey, aux)


def frame(op, length, off=0, aux=0, how=0, payload=b""):
    """One frame in the fuzzer's structured mode (plausible fields, server's own rkey)."""
    return struct.pack("<BBHHH", op, how, length, off, aux) + payload


seeds = {
    # Raw bytes to the listener: a CONN_REQ nobody accepts, and a wrong magic.
    "raw-conn-req": bytes([0]) + header(CONN_REQ, 4) + b"hi!\0",
    "raw-bad-magic": bytes([0]) + b"GET / HTTP/1.0\r\n\r\n",
    # Accepted connection, then raw frames: a send, a graceful disconnect.
    "raw-send-disc": bytes([HANDSHAKE, 0]) + header(SEND, 16, 0) + b"0123456789abcdef"
    + header(DISC, 0, 1),
    # Accepted, then a frame with a length far beyond the receive buffers.
    "raw-huge-send": bytes([HANDSHAKE, 0]) + header(SEND, 0x7FFFFFFF, 0) + b"x" * 64,
    # Rejected request, then bytes on the dying socket.
    "reject-then-send": bytes([HANDSHAKE | REJECT, 0]) + header(SEND, 4, 0) + b"abcd",
    # Structured: send, RDMA write into the buffer, RDMA read request, ack, disconnect.
    "framed-mix": bytes([HANDSHAKE | FRAMED, 3]) + b"pd\0"
    + frame(SEND, 100, payload=bytes(range(100)))
    + frame(WRITE, 64, off=8192, how=0x04, payload=b"w" * 64)
    + frame(READ_REQ, 0, off=0, aux=512)
    + frame(ACK, 0) + frame(NAK, 0, aux=1) + frame(DISC, 0),
    # Structured, half-close: a write outside the registered buffer (bad addr) and a
    # READ_RESP nobody asked for.
    "framed-violation": bytes([HANDSHAKE | FRAMED | HALF_CLOSE, 0])
    + frame(READ_RESP, 32, payload=b"r" * 32)
    + frame(WRITE, 16, off=0xFFFF, how=0x10, payload=b"\0" * 8 + b"z" * 16),
    # Structured: more sends than the server posted receives, then DISC: the endpoint
    # stops reading until a receive is posted (by design), so the end waits behind them.
    "framed-sends-beyond-receives": bytes([HANDSHAKE | FRAMED, 0])
    + b"".join(frame(SEND, 16, payload=b"s" * 16) for _ in range(6)) + frame(DISC, 0),
    # Active: the provider connects to the harness. Accepted (version-1 terms, so the
    # frames after it are in the agreed framing), then a send and a disconnect.
    "active-accept-send-disc": bytes([ACTIVE | FRAMED, 1, 0, 1, 0])
    + frame(SEND, 16, payload=b"0123456789abcdef") + frame(DISC, 0),
    # Active: rejected with private data; accepted with private data that never comes
    # (the answer deadline ends it); an answer that is no frame at all.
    "active-reject": bytes([ACTIVE | FRAMED, 3, 4, 1, 0]) + b"nope",
    "active-half-answer": bytes([ACTIVE | FRAMED, 1, 40, 1, 0]) + b"x" * 10,
    "active-raw-garbage": bytes([ACTIVE]) + b"HTTP/1.1 200 OK\r\n\r\n",
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "tcp_wire")
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
