#!/usr/bin/env python3
"""What a polled ping-pong's user-space code touches between two system calls.

Reads the logs of `valgrind --tool=lackey --trace-mem=yes --trace-syscalls=yes` (one per
process, the parent's first: the forked peer inherits its mappings) and measures, in each
process's main thread, two kinds of interval:

  turnaround   from a recv() that brought a small message (--max-bytes) on an IP socket to
               the send() of the answer on the same socket
  empty round  from a recv() that found nothing (EAGAIN) to the next recv() on a socket
               that had turnarounds

and for each: instructions run, distinct 64-byte lines and 4 KiB pages of code and of data.
On a machine whose system calls cool the caches and TLBs (page-table isolation without
PCID, docs/benchmarks.md), these counts, not the instructions alone, set what the DAT side
pays above raw TCP; unlike a clock they do not depend on the machine's mood.

An interval is "DAT" when it ran code of the tcp provider, else "raw TCP"; a DAT turnaround
is "send/recv", "RDMA write" or "RDMA read" by the libdat2 post it ran. Clock reads do not end an
interval (valgrind makes the vDSO's system calls). Intervals that another thread ran in
(valgrind runs one thread at a time), or that ended in any other system call (a lock's
futex, an epoll_wait), are left out.

With --per-process, one row per kind and process: the two processes of a ping-pong run
different loops (datbench's parent and its forked peer) and differ by several lines, raw TCP
as well, so a median pooled over both flips between them from run to run; compare builds
row by row.

With --hot OBJECT... (the object files of the provider and libdat2), also lists the
functions of those libraries that the ping-pongs' DAT intervals (send/recv, RDMA write and
RDMA read turnarounds, empty rounds) ran but the compiler did not put in .text.hot ([[gnu::hot]], the
hot block); with --check it exits 1 when there is one, or when no function resolved at all
(nothing would have been checked).
"""

import argparse
import bisect
import collections
import os
import re
import statistics
import subprocess
import sys

SYSCALL = re.compile(rb'SYSCALL\[(\d+),(\d+)\]\((\d+)\) (.*)')
CALL = re.compile(rb'sys_(\w+) ?\( ?(\d+)?')
RESULT = re.compile(rb'--> (?:\[[a-z-]+\] )?(Success|Failure)\((0x[0-9a-f]+)\)')
OPENAT = re.compile(rb'sys_openat \( \d+, 0x[0-9a-f]+\(([^)]*)\)')
MMAP = re.compile(rb'sys_mmap \( 0x[0-9a-f]+, (\d+), \d+, \d+, (\d+), (\d+) \)')
RECV = {b'recvfrom', b'recvmsg', b'read'}
SEND = {b'sendto', b'sendmsg', b'write', b'writev'}
EAGAIN = 0xb
FORK = re.compile(rb'clone\(fork\): process \d+ created child (\d+)')
AF_INET, AF_INET6 = 2, 10
CLOCKS = {b'clock_gettime', b'clock_getres', b'gettimeofday', b'time', b'getcpu'}
PROVIDER = 'libopendat-tcp.so'
LIBDAT = 'libdat2.so.2'


class Mappings:
    """File mappings seen in the logs: address -> (library, offset in the file)."""

    def __init__(self):
        self.fd_path = {}
        self.ranges = []  # (start, end, name, file offset), in mapping order

    def copy(self):
        c = Mappings()
        c.fd_path, c.ranges = dict(self.fd_path), list(self.ranges)
        return c

    def opened(self, path, fd):
        self.fd_path[fd] = path

    def mapped(self, addr, length, fd, offset):
        path = self.fd_path.get(fd)
        if path is not None:
            self.ranges.append((addr, addr + length, path, offset))

    def find(self, addr):
        for start, end, path, offset in reversed(self.ranges):
            if start <= addr < end:
                return path, addr - start + offset
        return None, None

    def name(self, addr, code=False):
        path, _ = self.find(addr)
        if path is not None:
            return os.path.basename(path)
        if code:  # valgrind maps the program itself without a system call in the log
            return 'the program'
        return 'stack' if addr >= 0x1ff0000000 else 'heap and anonymous'


class Symbols:
    """Function symbols of the libraries, by file offset (their code is mapped at vaddr ==
    file offset, as the linker lays out a shared library's text)."""

    def __init__(self):
        self.tables = {}

    def table(self, path):
        if path not in self.tables:
            rows = []
            try:
                out = subprocess.run(['nm', '-C', '--defined-only', '-S', '-t', 'd', path],
                                     capture_output=True, text=True, check=False).stdout
            except OSError:
                out = ''
            for line in out.splitlines():
                f = line.split(None, 3)
                if len(f) == 4 and f[2] in 'tTwWi':
                    rows.append((int(f[0]), int(f[1]), f[3]))
            rows.sort()
            self.tables[path] = rows
        return self.tables[path]

    def function(self, path, offset):
        rows = self.table(path)
        i = bisect.bisect_right(rows, (offset, 1 << 62, '')) - 1
        if i >= 0 and rows[i][0] <= offset < rows[i][0] + max(rows[i][1], 1):
            return rows[i][2]
        return None


class Interval:
    __slots__ = ('kind', 'fd', 'maps', 'code', 'code_lines', 'data', 'data_by', 'instructions',
                 'other_thread', 'last', 'process')

    def __init__(self, kind, fd, maps):
        self.kind, self.fd, self.maps = kind, fd, maps
        self.code = collections.Counter()  # instruction address -> times run
        self.code_lines = set()            # 64-byte lines of code (addr >> 6)
        self.data = set()                  # 64-byte lines of data (addr >> 6)
        self.data_by = {}                  # data line -> the instruction that touched it first
        self.last = 0                      # the instruction run last
        self.instructions = 0
        self.other_thread = False
        self.process = 0                   # which log (0: the parent)


def touch(lines, line):
    """Adds the lines an access ('<addr>,<size>' after the column) covers to `lines`."""
    comma = line.index(b',')
    a = int(line[3:comma], 16)
    lines.add(a >> 6)
    last = a + max(int(line[comma + 1:]) - 1, 0)
    if last >> 6 != a >> 6:
        lines.add(last >> 6)
    return a


def read_log(path, maps, done, max_bytes, children):
    """Collects the main thread's closed intervals of one process's log into `done`, each
    with the process's mappings (`maps`: the parent's, copied, for a forked child).
    A turnaround's recv() brought at most `max_bytes` (a small message, not a bulk
    transfer's answer). Both kinds count only on a ping-pong's socket: an IP socket
    (made by socket(), or accepted from such a listener) that was polled (had empty
    rounds) and turned messages around; not the control socket's blocking one-byte
    barriers, netlink, or the socket pair on which the provider times empty receives when
    an IA opens. Clock reads do not end an interval: valgrind turns the vDSO's into system
    calls. A fork's child pid gets a copy of the mappings in `children`."""
    found = []
    closed = collections.Counter()  # fd -> closes so far: a number reused is another socket
    domain = {}    # fd -> the domain of the socket() it was made by (or its listener's)
    pending = {}   # tid -> the call line of a system call under way ([async])
    open_iv = None
    main_tid = None
    with open(path, 'rb') as f:
        for line in f:
            c = line[:1]
            if c == b'I':
                if open_iv is not None and b'SYSCALL' not in line:
                    a = touch(open_iv.code_lines, line)
                    open_iv.last = a
                    open_iv.code[a] += 1
                    open_iv.instructions += 1
                    continue
                if b'SYSCALL' not in line:
                    continue
            elif c == b' ':
                if open_iv is not None and line[1:2] in b'LSM' and b'SYSCALL' not in line:
                    d = touch(open_iv.data, line) >> 6
                    if d not in open_iv.data_by:
                        open_iv.data_by[d] = open_iv.last
                    continue
                if b'SYSCALL' not in line:
                    continue
            at = line.find(b'SYSCALL[')
            if at < 0:
                continue
            fork = FORK.search(line)
            if fork:  # the child starts with the mappings the parent has now
                children[int(fork.group(1))] = maps.copy()
            m = SYSCALL.match(line, at)
            if m is None:
                continue
            tid, rest = m.group(2), m.group(4)
            if main_tid is None:
                main_tid = tid
            if tid != main_tid and open_iv is not None:
                open_iv.other_thread = True   # another thread ran inside the interval
            if rest.startswith(b'...'):       # the end of a call that went [async]
                call, result = pending.pop(tid, b''), rest
            else:
                call, result = rest, rest
                cm = CALL.match(call)
                if tid == main_tid and not (cm and cm.group(1) in CLOCKS):
                    open_iv = close(open_iv, call, found)  # the main thread enters a call
                if b'--> [async] ...' in rest:
                    pending[tid] = rest
                    continue
            r = RESULT.search(result)
            if r is None:
                continue
            ok, value = r.group(1) == b'Success', int(r.group(2), 16)
            o = OPENAT.search(call)
            if o and ok:
                maps.opened(o.group(1).decode('latin1'), value)
            mm = MMAP.search(call)
            if mm and ok:
                maps.mapped(value, int(mm.group(1)), int(mm.group(2)), int(mm.group(3)))
            cm = CALL.match(call)
            verb = cm.group(1) if cm else None
            if verb == b'close' and cm.group(2) is not None:
                closed[cm.group(2)] += 1
                domain.pop(cm.group(2), None)
            if verb == b'socket' and ok and cm.group(2) is not None:
                domain[str(value).encode()] = int(cm.group(2))
            if verb in (b'accept', b'accept4') and ok and cm.group(2) in domain:
                domain[str(value).encode()] = domain[cm.group(2)]  # the listener's
            if tid != main_tid or verb in CLOCKS:
                continue
            fd = cm.group(2) if cm else None
            if verb in RECV and fd is not None and domain.get(fd) in (AF_INET, AF_INET6):
                sock = (fd, closed[fd])
                if ok and 0 < value <= max_bytes:
                    open_iv = Interval('turnaround', sock, maps)
                elif not ok and value == EAGAIN:
                    open_iv = Interval('empty round', sock, maps)
                else:
                    open_iv = None
            else:
                open_iv = None
    # A ping-pong's socket is polled (it had empty rounds) and turned messages around; the
    # control socket's blocking one-byte barriers never find it empty.
    polled = {iv.fd for iv in found if iv.kind == 'empty round'}
    pingpong = {iv.fd for iv in found if iv.kind == 'turnaround'} & polled
    done.extend(iv for iv in found if iv.fd in pingpong)


def close(iv, call, done):
    if iv is None:
        return None
    cm = CALL.match(call)
    if cm is not None and cm.group(2) == iv.fd[0] and not iv.other_thread:
        verb = cm.group(1)
        if (iv.kind == 'turnaround' and verb in SEND) or (iv.kind == 'empty round' and verb in RECV):
            done.append(iv)
    return None


class Resolver:
    """Instruction address -> (library name or None, function of the provider or libdat2
    or None), per process's mappings, cached."""

    def __init__(self):
        self.syms, self.cache = Symbols(), {}

    def __call__(self, iv, a):
        key = (id(iv.maps), a)
        if key not in self.cache:
            path, off = iv.maps.find(a)
            name = os.path.basename(path) if path else None
            fn = self.syms.function(path, off) if name in (PROVIDER, LIBDAT) else None
            self.cache[key] = (name, fn)
        return self.cache[key]


def classify(iv, resolve):
    """'raw TCP' / 'DAT send/recv' / 'DAT RDMA write' / 'DAT RDMA read' / 'DAT other'."""
    dat, posts = False, set()
    for a in iv.code:
        name, fn = resolve(iv, a)
        if name == PROVIDER:
            dat = True
        elif name == LIBDAT and fn is not None:
            posts.add(fn)
    if not dat:
        return 'raw TCP ' + iv.kind
    if iv.kind != 'turnaround':
        return 'DAT ' + iv.kind
    if 'dat_ep_post_rdma_write' in posts:
        return 'DAT RDMA write turnaround'
    if 'dat_ep_post_send' in posts:
        return 'DAT send/recv turnaround'
    if 'dat_ep_post_rdma_read' in posts:
        return 'DAT RDMA read turnaround'
    return 'DAT other turnaround'


def hot_functions(objects):
    """Demangled names of the functions the compiler put in .text.hot."""
    hot = set()
    for o in objects:
        out = subprocess.run(['objdump', '-t', '-C', o], capture_output=True, text=True,
                             check=False).stdout
        for line in out.splitlines():
            f = line.split()
            if 'F' not in f:
                continue
            i = f.index('F')
            if i + 1 >= len(f) or not f[i + 1].startswith('.text.hot'):
                continue
            j = i + 3
            if j < len(f) and f[j] in ('.hidden', '.protected', '.internal'):
                j += 1
            hot.add(' '.join(f[j:]))
    return hot


def log_pid(path):
    """The pid of a log's process: its first SYSCALL line's."""
    with open(path, 'rb') as f:
        for line in f:
            m = SYSCALL.search(line)
            if m:
                return int(m.group(1))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('logs', nargs='+', help='lackey logs, the parent process first')
    ap.add_argument('--hot', nargs='*', default=None, metavar='OBJECT',
                    help='object files whose .text.hot functions form the hot block')
    ap.add_argument('--check', action='store_true',
                    help='exit 1 when a DAT interval ran a provider or libdat2 function '
                         'outside the hot block (needs --hot)')
    ap.add_argument('--max-bytes', type=int, default=64, metavar='N',
                    help='a turnaround\'s recv() brings at most N bytes (64: an 8-byte '
                         'message with its DAT header)')
    ap.add_argument('--functions', type=int, default=0, metavar='N',
                    help='also list the N functions that run the most instructions per '
                         'interval of the --group kind')
    ap.add_argument('--per-process', action='store_true',
                    help='one row per interval kind and process (the parent first): the two '
                         'processes of a ping-pong differ by several lines, and the pooled '
                         'median flips between them from run to run')
    ap.add_argument('--group', default='DAT send/recv turnaround', metavar='KIND',
                    help='the interval kind --functions lists (a row name of the table; '
                         'default: %(default)s)')
    args = ap.parse_args()

    resolve = Resolver()
    intervals, children, parent = [], {}, None
    for log in args.logs:
        pid = log_pid(log)
        if parent is None:
            maps = Mappings()
        else:
            maps = children.get(pid) or parent.copy()
        before = len(intervals)
        read_log(log, maps, intervals, args.max_bytes, children)
        for iv in intervals[before:]:
            iv.process = args.logs.index(log)
        parent = parent or maps

    groups = collections.defaultdict(list)
    for iv in intervals:
        groups[classify(iv, resolve)].append(iv)

    order = ['raw TCP turnaround', 'DAT send/recv turnaround', 'DAT RDMA write turnaround',
             'DAT RDMA read turnaround', 'DAT other turnaround', 'raw TCP empty round', 'DAT empty round']
    print('Between two system calls of a polled ping-pong, per interval (medians %s):'
          % ('per process, p0 the parent' if args.per_process else 'over both processes'))
    width = 30 if args.per_process else 26
    print('| %-*s | count | instructions | code lines | data lines | code pages | data pages |'
          % (width, 'interval'))
    print('|%s|-------|--------------|------------|------------|------------|------------|'
          % ('-' * (width + 2)))
    for g in order:
        ivs = groups.get(g)
        if not ivs:
            continue
        rows = [(g, ivs)]
        if args.per_process:
            by = collections.defaultdict(list)
            for iv in ivs:
                by[iv.process].append(iv)
            rows = [('%s, p%d' % (g, p), by[p]) for p in sorted(by)]
        for name, part in rows:
            med = lambda f: statistics.median(f(iv) for iv in part)
            print('| %-*s | %5d | %12d | %10d | %10d | %10d | %10d |' % (
                width, name, len(part), med(lambda iv: iv.instructions),
                med(lambda iv: len(iv.code_lines)), med(lambda iv: len(iv.data)),
                med(lambda iv: len({c >> 6 for c in iv.code_lines})),
                med(lambda iv: len({d >> 6 for d in iv.data}))))

    print('\nPages by where they are (mean per interval; c = code, d = data):')
    for g in order:
        ivs = groups.get(g)
        if not ivs:
            continue
        where = collections.Counter()
        for iv in ivs:
            for p in {c >> 6 for c in iv.code_lines}:
                where[iv.maps.name(p << 12, True) + ' c'] += 1
            for p in {d >> 6 for d in iv.data}:
                where[iv.maps.name(p << 12) + ' d'] += 1
        print('  %-26s ' % g + ', '.join('%s %.1f' % (k, v / len(ivs))
                                          for k, v in where.most_common()))

    if args.functions:
        if args.group not in groups:
            sys.exit('footprint.py: no interval of kind %r; the kinds: %s'
                     % (args.group, ', '.join(sorted(groups))))
        ivs = groups[args.group]
        # Lines as well as instructions: after a system call, a line the code touches costs
        # more than an instruction it runs (docs/benchmarks.md).
        per, lines, first = collections.Counter(), collections.Counter(), collections.Counter()

        def where(iv, a):
            name, fn = resolve(iv, a)
            return '%s: %s' % (name or iv.maps.name(a, True), fn or '(no symbol: PLT or other)')

        for iv in ivs:
            seen = collections.defaultdict(set)
            for a, n in iv.code.items():
                key = where(iv, a)
                per[key] += n
                seen[key].add(a >> 6)
            for key, ls in seen.items():
                lines[key] += len(ls)
            for a in iv.data_by.values():
                first[where(iv, a)] += 1
        print('\nPer %s, by function: instructions run, code lines touched, data lines '
              'it touched first' % args.group)
        n = max(len(ivs), 1)
        for k, v in per.most_common(args.functions):
            print('  %7.1f %5.1f %5.1f  %s' % (v / n, lines[k] / n, first[k] / n, k))

    status = 0
    if args.hot is not None:
        hot = hot_functions(args.hot)
        cold, checked = collections.Counter(), set()
        dat_groups = ['DAT send/recv turnaround', 'DAT RDMA write turnaround',
                      'DAT RDMA read turnaround', 'DAT empty round']
        for g in dat_groups:
            for iv in groups.get(g, []):
                for a in iv.code:
                    name, fn = resolve(iv, a)
                    if name in (PROVIDER, LIBDAT) and fn is not None:
                        checked.add(fn)
                        if fn not in hot:
                            cold['%s: %s' % (name, fn)] += 1
        if not hot:
            print('\nno .text.hot function in the objects given')
            status = 1
        elif not checked:
            # Nothing resolved to a function (a stripped library, a layout this tool does
            # not know): the check would pass having checked nothing.
            print('\nno function of the provider or libdat2 found in the DAT intervals: '
                  'nothing checked')
            status = 1 if args.check else 0
        elif cold:
            print('\nRun in the ping-pongs\' DAT intervals but outside the hot block (not [[gnu::hot]]):')
            for k, v in cold.most_common():
                print('  %s' % k)
            status = 1 if args.check else 0
        else:
            print('\nEvery provider and libdat2 function the DAT intervals ran is in the hot '
                  'block (%d functions).' % len(checked))
    if args.check and (not groups.get('DAT send/recv turnaround') or
                       not groups.get('DAT empty round')):
        print('no DAT send/recv turnaround or empty round found in the logs')
        status = 1
    return status


if __name__ == '__main__':
    sys.exit(main())
