// SPDX-License-Identifier: BSD-2-Clause
/* io.c - the event loop under the scheduler (see io.h). Sockets are non-blocking and
 * join one epoll set once, edge-triggered, when they are made (as Go's netpoller does):
 * a process tries its operation, and only after EAGAIN waits for the next edge, so no
 * wait costs an epoll_ctl. An edge that comes while nobody waits is kept as a ready bit
 * that the next wait in that direction takes at once, so none is lost. Regular files
 * are always ready (epoll cannot watch them): their reads and writes block the VM.
 *
 * The alarm is a timerfd in the epoll set, set no later than the earliest timer: it
 * ends the idle wait, and it is what the watcher watches for timers.
 *
 * The watcher thread exists only after the first time a computing process could be
 * preempted by a waiter (see sched.c, update_watch). It blocks in poll(2) on the alarm,
 * or on the epoll descriptor itself (which reports readiness without taking any event)
 * when an I/O waiter outranks the running process; when that is ready it sets
 * sched_attention once and parks on a futex until the scheduler has looked
 * (io_watch_rearm). No signal, no interval timer: the dispatch loop's safe points test
 * the attention word they always tested. */
#define _GNU_SOURCE
#include "io.h"
#include "gc.h"
#include "probes.h"
#include "sched.h"
#include "thread.h"
#include "vm.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* A full collection reclaims dropped handles when this many are open (at least), and
 * then when twice as many as survived it are. */
#define RECLAIM_MIN 256
/* The least time between two full collections forced by EMFILE/ENFILE: 1 s. */
#define RECLAIM_FORCED_NS 1000000000ull
/* The epoll event data of the alarm timerfd (a descriptor's is fd | gen << 32). */
#define ALARM_TAG UINT64_MAX

typedef struct IOEntry {
    Value owner;            /* the handle object (weak: see io_weak_scan); 0: free slot */
    uint32_t gen;           /* bumped at each adoption: stale events are recognised */
    bool pollable;          /* in the epoll set (a socket); else always ready */
    uint8_t kind;           /* io__batch's kind of descriptor + 1 (SQ_IO_FILE ...); 0: not known yet */
    uint8_t ready;          /* bit per direction: an edge that no waiter has taken */
    int openIndex;          /* its place in loop.open */
    Process *waiter[2];     /* waiting to read or accept; to write or connect: FIFO lists
                             * through Process.ioNext */
} IOEntry;

enum { WATCH_OFF = 0, WATCH_ON, WATCH_FIRED };

static struct {
    int epfd;
    IOEntry *fds;           /* indexed by descriptor */
    int capFds;
    int *open;              /* the open descriptors, densely, for the weak scan */
    int numOpen, capOpen;
    int numWaiters;
    uint32_t gen;
    int reclaimAt, reclaimMax;
    int alarmFd;            /* a timerfd in the epoll set: the earliest timer */
    uint64_t alarmNs;       /* when the alarm goes off; 0: not set, or it went off */
    /* the watcher */
    int watchState;         /* WATCH_OFF, _ON, _FIRED: the futex word the watcher parks on */
    bool watchEvents;       /* it polls the whole epoll set, not only the alarm */
    bool watcherStarted;
    int kickFd;             /* an eventfd: look again at what to poll */
} loop = {.epfd = -1, .alarmFd = -1, .kickFd = -1};

/* ---- The table of descriptors ---- */

static void grow_fds(int fd)
{
    int cap = loop.capFds ? loop.capFds : 64;
    while (cap <= fd) cap *= 2;
    loop.fds = vm_xrealloc(loop.fds, (size_t)cap * sizeof(IOEntry));
    memset(loop.fds + loop.capFds, 0, (size_t)(cap - loop.capFds) * sizeof(IOEntry));
    loop.capFds = cap;
}

static void forget(int fd)
{
    IOEntry *e = &loop.fds[fd];
    int last = loop.open[--loop.numOpen];
    loop.open[e->openIndex] = last;
    loop.fds[last].openIndex = e->openIndex;
    memset(e, 0, sizeof *e);
}

int io_adopt(int fd, Value owner, bool pollable)
{
    if (fd >= loop.capFds) grow_fds(fd);
    if (loop.numOpen == loop.capOpen) {
        loop.capOpen = loop.capOpen ? 2 * loop.capOpen : 64;
        loop.open = vm_xrealloc(loop.open, (size_t)loop.capOpen * sizeof(int));
    }
    IOEntry *e = &loop.fds[fd];
    uint8_t kind = e->kind; /* open's new descriptor's, if io_fd_kind found it */
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->owner = owner;
    e->gen = ++loop.gen;
    e->pollable = pollable;
    e->openIndex = loop.numOpen;
    loop.open[loop.numOpen++] = fd;
    if (pollable) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
                                 .data.u64 = (uint64_t)(uint32_t)fd | (uint64_t)e->gen << 32};
        if (epoll_ctl(loop.epfd, EPOLL_CTL_ADD, fd, &ev)) {
            int err = errno;
            forget(fd);
            close(fd);
            return -err;
        }
    }
    return 0;
}

int io_fd_of(Value handle)
{
    Value f = as_obj(handle)->slots[0];
    if (!is_int(f)) return -1;
    int64_t fd = int_val(f);
    if (fd < 0 || fd >= loop.capFds || loop.fds[fd].owner != handle) return -1;
    return (int)fd;
}

/* Wakes every process of a waiter list, first come first readied. */
static void wake_all(Process *p)
{
    while (p) {
        Process *next = p->ioNext;
        p->ioNext = NULL;
        loop.numWaiters--;
        sched_io_wake(p);
        p = next;
    }
}

int io_close(int fd)
{
    IOEntry *e = &loop.fds[fd];
    Process *w[2] = {e->waiter[0], e->waiter[1]};
    int kind = SQ_IO_OTHER;
    if (SQ_ENABLED(IO_BATCH)) { /* SQ_IO_START, with the kind before the entry goes */
        kind = io_fd_kind(fd);
        probe_io_start();
    }
    forget(fd);
    /* Linux releases the descriptor even when close fails (EINTR, EIO): never retry */
    int rc = close(fd);
    SQ_IO_END(SQ_IO_CLOSE, fd, rc, kind);
    int r = rc ? -errno : 0;
    wake_all(w[0]);
    wake_all(w[1]);
    return r;
}

/* What fstat (and, for a socket, its protocol) says fd is. */
static int stat_kind(int fd)
{
    struct stat st;
    int proto = 0;
    socklen_t len = sizeof proto;
    if (fstat(fd, &st)) return SQ_IO_OTHER;
    if (S_ISREG(st.st_mode)) return SQ_IO_FILE;
    if (S_ISSOCK(st.st_mode) && !getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) && proto == IPPROTO_TCP)
        return SQ_IO_TCP;
    return SQ_IO_OTHER;
}

int io_fd_kind(int fd)
{
    if (fd < 0 || fd >= loop.capFds || !loop.fds[fd].owner) return SQ_IO_OTHER;
    IOEntry *e = &loop.fds[fd];
    /* a socket in the epoll set is one the VM made: TCP (prim_io.c) */
    if (!e->kind) e->kind = (uint8_t)(1 + (e->pollable ? SQ_IO_TCP : stat_kind(fd)));
    return e->kind - 1;
}

int io_fd_kind_new(int fd)
{
    if (fd < 0) return SQ_IO_OTHER;
    if (fd >= loop.capFds) grow_fds(fd);
    IOEntry *e = &loop.fds[fd];
    e->kind = (uint8_t)(1 + stat_kind(fd)); /* a free entry: io_adopt keeps it */
    return e->kind - 1;
}

void io_not_ready(int fd, int dir) { loop.fds[fd].ready &= (uint8_t)~(1u << dir); }

bool io_is_socket(int fd) { return loop.fds[fd].pollable; }

/* The collector found the handle of an open descriptor unreachable: close it. A
 * waiting process keeps its handle alive (it is in the process's frames), so nothing
 * waits on a descriptor closed here. */
static void io_weak_scan(GCAliveFn alive)
{
    for (int i = 0; i < loop.numOpen;) {
        int fd = loop.open[i];
        if (alive(&loop.fds[fd].owner)) {
            i++;
            continue;
        }
        forget(fd);
        close(fd);
    }
}

void io_reclaim(bool force)
{
    if (!force && loop.numOpen < loop.reclaimAt) return;
    if (force) {
        /* EMFILE again and again (a server retries its accept while descriptors stay
         * exhausted): at most one forced full collection per RECLAIM_FORCED_NS, a
         * young one (handles dropped since) otherwise, so that retries cannot make
         * every connection pause for a whole-heap collection */
        static uint64_t lastForcedNs;
        uint64_t now = vm_now_ns();
        if (lastForcedNs && now - lastForcedNs < RECLAIM_FORCED_NS) {
            gc_young_collect();
            return;
        }
        lastForcedNs = now;
    }
    gc_full_collect();
    /* twice what is live, within half the descriptor limit, but never so close to what
     * is live that every open collects */
    int at = 2 * loop.numOpen > RECLAIM_MIN ? 2 * loop.numOpen : RECLAIM_MIN;
    if (at > loop.reclaimMax) at = loop.reclaimMax;
    if (at < loop.numOpen + 32) at = loop.numOpen + 32;
    loop.reclaimAt = at;
}

static void close_all(void)
{
    while (loop.numOpen) {
        int fd = loop.open[loop.numOpen - 1];
        forget(fd);
        close(fd);
    }
}

/* ---- Waiting ---- */

PrimResult io_wait(Value *args, int fd, int op, uint64_t timeoutNs)
{
    IOEntry *e = &loop.fds[fd];
    int dir = io_op_dir(op);
    args[0] = VM.trueObj;
    if (!e->pollable) return PRIM_OK;
    if (e->ready & (1u << dir)) {
        e->ready &= (uint8_t)~(1u << dir);
        return PRIM_OK;
    }
    Process **pp = &e->waiter[dir];
    while (*pp) pp = &(*pp)->ioNext;
    *pp = interp_current;
    interp_current->ioNext = NULL;
    loop.numWaiters++;
    return sched_io_wait(args, fd, op, timeoutNs);
}

bool io_has_waiters(void) { return loop.numWaiters > 0; }

void io_cancel(Process *p)
{
    IOEntry *e = &loop.fds[p->ioFd];
    for (Process **pp = &e->waiter[io_op_dir(p->ioOp)]; *pp; pp = &(*pp)->ioNext)
        if (*pp == p) {
            *pp = p->ioNext;
            p->ioNext = NULL;
            loop.numWaiters--;
            return;
        }
}

/* An edge in dir: every process waiting that way tries again (several may wait to
 * accept on one listener; those that find nothing wait again); with none waiting, the
 * next to come takes it. */
static void became_ready(IOEntry *e, int dir)
{
    Process *p = e->waiter[dir];
    if (!p) {
        e->ready |= (uint8_t)(1u << dir);
        return;
    }
    e->waiter[dir] = NULL;
    wake_all(p);
}

void io_poll(bool block)
{
    struct epoll_event evs[64];
    /* What the program printed before every process waits is out before the VM
     * sleeps: a server's "listening on" line must reach a pipe while it serves. */
    if (block) fflush(stdout);
    record_round_begin(); /* the waits it ends ended when epoll_wait returned */
    for (int n = 64; n == 64; block = false) { /* a full batch: take what else is there */
        n = epoll_wait(loop.epfd, evs, 64, block ? -1 : 0);
        for (int i = 0; i < n; i++) {
            uint64_t d = evs[i].data.u64;
            if (d == ALARM_TAG) {
                loop.alarmNs = 0;
                continue;
            }
            int fd = (int)(uint32_t)d;
            if (fd >= loop.capFds || !loop.fds[fd].owner || loop.fds[fd].gen != (uint32_t)(d >> 32)) continue;
            IOEntry *e = &loop.fds[fd];
            uint32_t ev = evs[i].events;
            if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) became_ready(e, IO_DIR_READ);
            if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) became_ready(e, IO_DIR_WRITE);
        }
    }
    record_round_end();
}

/* ---- The watcher thread ---- */

static void futex_wake_watcher(void) { syscall(SYS_futex, &loop.watchState, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); }

/* Polls the alarm, or the whole epoll set (the alarm is in it), per watchEvents; the
 * kick eventfd makes it look again at what to poll. */
static void *watcher_main(void *unused)
{
    (void)unused;
    for (;;) {
        int s = __atomic_load_n(&loop.watchState, __ATOMIC_ACQUIRE);
        if (s != WATCH_ON) {
            syscall(SYS_futex, &loop.watchState, FUTEX_WAIT_PRIVATE, s, NULL, NULL, 0);
            continue;
        }
        bool events = __atomic_load_n(&loop.watchEvents, __ATOMIC_ACQUIRE);
        struct pollfd pfd[2] = {{.fd = events ? loop.epfd : loop.alarmFd, .events = POLLIN},
                                {.fd = loop.kickFd, .events = POLLIN}};
        if (poll(pfd, 2, -1) <= 0) continue;
        if (pfd[1].revents) {
            uint64_t n;
            if (read(loop.kickFd, &n, sizeof n) < 0) { /* drained already */ }
            continue;
        }
        if (events != __atomic_load_n(&loop.watchEvents, __ATOMIC_ACQUIRE)) continue;
        int on = WATCH_ON;
        if (__atomic_compare_exchange_n(&loop.watchState, &on, WATCH_FIRED, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            __atomic_store_n(&sched_attention, 1, __ATOMIC_RELEASE); /* the VM thread tests it at its next safe point */
    }
    return NULL;
}

static void start_watcher(void)
{
    loop.watcherStarted = true;
    loop.kickFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (loop.kickFd < 0) vm_fatal("cannot make the scheduler's watcher: %s", strerror(errno));
    int err = thread_start_helper(watcher_main, "sqvm-watcher");
    if (err) vm_fatal("cannot start the scheduler's watcher thread: %s", strerror(err));
}

void io_watch(int what)
{
    int s = __atomic_load_n(&loop.watchState, __ATOMIC_RELAXED);
    if (what == WATCH_NONE) {
        if (s == WATCH_ON) __atomic_compare_exchange_n(&loop.watchState, &s, WATCH_OFF, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
        return;
    }
    bool events = what == WATCH_EVENTS;
    if (events != loop.watchEvents) {
        __atomic_store_n(&loop.watchEvents, events, __ATOMIC_RELEASE);
        /* polling the alarm only (or about to), it would not see the events it must see
         * now: a futex wake does not end a poll */
        if (events && loop.watcherStarted) {
            uint64_t one = 1;
            if (write(loop.kickFd, &one, sizeof one) < 0) { /* the counter is full: kicked anyway */ }
        }
    }
    if (s != WATCH_OFF) return;
    if (!loop.watcherStarted) start_watcher();
    __atomic_store_n(&loop.watchState, WATCH_ON, __ATOMIC_RELEASE);
    futex_wake_watcher();
}

void io_watch_rearm(void)
{
    int fired = WATCH_FIRED;
    __atomic_compare_exchange_n(&loop.watchState, &fired, WATCH_OFF, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* ---- The alarm: a timerfd in the epoll set ---- */

/* A timerfd expires exactly when set (epoll_wait's own timeout would add the thread's
 * timer slack, 50 us); setting it also clears an expiry nobody has collected. */
void io_alarm_by(uint64_t ns)
{
    if (loop.alarmNs && loop.alarmNs <= ns && loop.alarmNs > vm_now_ns()) return; /* set, early enough, to come */
    struct itimerspec its = {.it_value = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)}};
    if (timerfd_settime(loop.alarmFd, TFD_TIMER_ABSTIME, &its, NULL) == 0) loop.alarmNs = ns;
}

/* ---- Start-up ---- */

void io_init(void)
{
    if (loop.epfd >= 0) return;
    loop.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (loop.epfd < 0) vm_fatal("cannot make the event loop's epoll set: %s", strerror(errno));
    loop.alarmFd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = ALARM_TAG};
    if (loop.alarmFd < 0 || epoll_ctl(loop.epfd, EPOLL_CTL_ADD, loop.alarmFd, &ev))
        vm_fatal("cannot make the event loop's timer: %s", strerror(errno));
    struct rlimit rl;
    loop.reclaimMax = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < INT32_MAX
                    ? (int)(rl.rlim_cur / 2) : INT32_MAX;
    loop.reclaimAt = RECLAIM_MIN < loop.reclaimMax ? RECLAIM_MIN : loop.reclaimMax;
    gc_set_weak_scanner(io_weak_scan);
    atexit(close_all);
    /* A write to a socket whose peer has gone is EPIPE, never a signal that ends the VM
     * (sockets also send with MSG_NOSIGNAL); a host program's own handler stays. */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

#ifdef SQVM_FUZZ
void io_fuzz_reset(void)
{
    close_all();
    loop.numWaiters = 0;
    /* even if it fired for the last program: the harness clears sched_attention */
    __atomic_store_n(&loop.watchState, WATCH_OFF, __ATOMIC_RELEASE);
}
#endif
