// SPDX-License-Identifier: BSD-2-Clause
/* prim_io.c - the primitives of IOHandle and its subclasses File, Socket and
 * ServerSocket (vm/lib): each does one system call's worth of work and never blocks on
 * a socket. An operation that would block answers nil, and the library's method waits
 * (primWait:timeout:, through the event loop, io.c) and tries again; a failure answers
 * the negated errno, which the library turns into an error through one method
 * (IOHandle class>>ioFailed:errno:). Descriptors are non-blocking (sockets) and
 * close-on-exec, and belong to the table in io.c from the moment they exist. Each read,
 * write, accept, connect and open system call is a site of io__batch's records
 * (SQ_IO_START/SQ_IO_END, probes.h); close's is io_close's. */
#define _GNU_SOURCE
#include "io.h"
#include "object.h"
#include "prims.h"
#include "probes.h"
#include "symbol.h"
#include "vm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fields of IOHandle (vm/lib/IOHandle.som): keep them first, in this order. */
enum { IOH_FD, IOH_NAME, IOH_NFIELDS };
/* The most one read: answers (a String of at most n bytes, so fewer is allowed). */
#define READ_MAX (1u << 20)

static PrimResult answer_errno(Value *a, int err)
{
    a[0] = int_value(-(int64_t)err);
    return PRIM_OK;
}

/* ---- Checking arguments and making handles ---- */

/* A class whose instances are handles: IOHandle or one of its subclasses. */
static ClassInfo *handle_class(Value classObj)
{
    ClassInfo *c = class_from_object(classObj);
    if (!c || c->instFormat != FMT_FIXED || c->numFields < IOH_NFIELDS) return NULL;
    for (ClassInfo *k = c; k; k = k->super)
        if (!strcmp(k->name, "IOHandle")) return c;
    return NULL;
}

/* A C string from a String argument: NULL if it is none or holds a NUL. */
static const char *cstring_arg(Value v)
{
    if (!is_string_like(v) || strlen(str_bytes(v)) != str_len(v)) return NULL;
    return str_bytes(v);
}

/* A new handle of class c for fd, named name (a String), owned by the table. Answers
 * the handle in a[0], or the error (fd closed). */
static PrimResult new_handle(Value *a, ClassInfo *c, int fd, Value name, bool socket)
{
    Value h = obj_instantiate(c, 0);
    as_obj(h)->slots[IOH_FD] = int_value(fd);
    as_obj(h)->slots[IOH_NAME] = name;
    gc_write_barrier(as_obj(h), name);
    int err = io_adopt(fd, h, socket);
    if (err) return answer_errno(a, -err);
    a[0] = h;
    return PRIM_OK;
}

static Value address_name(const struct sockaddr_storage *ss)
{
    char host[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 16];
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const void *)ss;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
        snprintf(buf, sizeof buf, "[%s]:%u", host, ntohs(s6->sin6_port));
    } else {
        const struct sockaddr_in *s4 = (const void *)ss;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        snprintf(buf, sizeof buf, "%s:%u", host, ntohs(s4->sin_port));
    }
    return str_from_cstr(buf);
}

/* A numeric IPv4 or IPv6 address, or localhost (no name lookups: one would block
 * every process). Answers 0 or an errno. */
static int parse_address(Value host, Value port, struct sockaddr_storage *ss, socklen_t *len)
{
    const char *h = cstring_arg(host);
    if (!h || !is_int(port) || int_val(port) < 0 || int_val(port) > 65535) return EINVAL;
    if (!strcmp(h, "localhost")) h = "127.0.0.1";
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *s4 = (void *)ss;
    struct sockaddr_in6 *s6 = (void *)ss;
    if (inet_pton(AF_INET, h, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)int_val(port));
        *len = sizeof *s4;
    } else if (inet_pton(AF_INET6, h, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)int_val(port));
        *len = sizeof *s6;
    } else {
        return EINVAL;
    }
    return 0;
}

/* ---- IOHandle ---- */

static PrimResult p_errno_text(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1])) return prim_fail(a, "errnoText: needs an Integer");
    a[0] = str_from_cstr(strerror((int)int_val(a[1])));
    return PRIM_OK;
}

static PrimResult p_close(Value *a, uint32_t n)
{
    (void)n;
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, 0);
    as_obj(a[0])->slots[IOH_FD] = VM.nil;
    return answer_errno(a, -io_close(fd));
}

static PrimResult p_read(Value *a, uint32_t n)
{
    (void)n;
    static char *buf;
    if (!is_int(a[1]) || int_val(a[1]) < 0) return prim_fail(a, "read: needs an Integer >= 0");
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    size_t want = int_val(a[1]) < READ_MAX ? (size_t)int_val(a[1]) : READ_MAX;
    if (!buf) buf = vm_xmalloc(READ_MAX);
    ssize_t got = 0;
    if (want) do {
        SQ_IO_START();
        got = read(fd, buf, want);
        SQ_IO_END(SQ_IO_READ, fd, got, SQ_IO_KIND_OF_OP);
    } while (got < 0 && errno == EINTR);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        io_not_ready(fd, IO_DIR_READ);
        a[0] = VM.nil;
        return PRIM_OK;
    }
    if (got < 0) return answer_errno(a, errno);
    a[0] = str_new(buf, (size_t)got);
    return PRIM_OK;
}

/* primWrite: aString from: offset -- the bytes of aString from offset (0-based) on, as
 * many as go: answers the offset after them (offset itself when nothing is left). */
static PrimResult p_write(Value *a, uint32_t n)
{
    (void)n;
    if (!is_string_like(a[1])) return prim_fail(a, "write: needs a String");
    if (!is_int(a[2]) || int_val(a[2]) < 0 || (size_t)int_val(a[2]) > str_len(a[1]))
        return prim_fail(a, "write offset out of range");
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    size_t off = (size_t)int_val(a[2]), left = str_len(a[1]) - off;
    if (!left) {
        a[0] = a[2];
        return PRIM_OK;
    }
    const char *p = str_bytes(a[1]) + off;
    bool sock = io_is_socket(fd);
    ssize_t put;
    do {
        SQ_IO_START();
        put = sock ? send(fd, p, left, MSG_NOSIGNAL) : write(fd, p, left);
        SQ_IO_END(SQ_IO_WRITE, fd, put, SQ_IO_KIND_OF_OP);
    } while (put < 0 && errno == EINTR);
    if (put < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        io_not_ready(fd, IO_DIR_WRITE);
        a[0] = VM.nil;
        return PRIM_OK;
    }
    if (put < 0) return answer_errno(a, errno);
    a[0] = int_value((int64_t)(off + (size_t)put));
    return PRIM_OK;
}

/* primWait: op timeout: ms -- op 0 read, 1 write, 2 accept, 3 connect; ms 0: no limit.
 * Answers true (ready: try again), false (timed out), or an error. */
static PrimResult p_wait(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || int_val(a[1]) < IO_OP_READ || int_val(a[1]) > IO_OP_CONNECT)
        return prim_fail(a, "primWait:timeout: needs an operation from 0 to 3");
    if (!is_int(a[2]) || int_val(a[2]) < 0 || int_val(a[2]) > (INT64_C(1) << 40))
        return prim_fail(a, "the timeout must be an Integer number of milliseconds >= 0");
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    return io_wait(a, fd, (int)int_val(a[1]), (uint64_t)int_val(a[2]) * 1000000u);
}

/* ---- File ---- */

static PrimResult p_file_open(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = handle_class(a[0]);
    const char *mode = cstring_arg(a[2]);
    if (!c) return prim_fail(a, "open:mode: needs a subclass of IOHandle");
    if (!cstring_arg(a[1])) return prim_fail(a, "open:mode: needs a path String without NUL");
    int flags;
    if (mode && !strcmp(mode, "r")) flags = O_RDONLY;
    else if (mode && !strcmp(mode, "w")) flags = O_WRONLY | O_CREAT | O_TRUNC;
    else if (mode && !strcmp(mode, "a")) flags = O_WRONLY | O_CREAT | O_APPEND;
    else return prim_fail(a, "open:mode: needs the mode 'r', 'w' or 'a'");
    io_reclaim(false);
    int fd;
    for (int tries = 0;; tries++) {
        do {
            SQ_IO_START();
            fd = open(str_bytes(a[1]), flags | O_CLOEXEC, 0666);
            SQ_IO_END(SQ_IO_OPEN, -1, fd, SQ_IO_KIND_OF_OP);
        } while (fd < 0 && errno == EINTR);
        if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || tries) break;
        io_reclaim(true);
    }
    if (fd < 0) return answer_errno(a, errno);
    return new_handle(a, c, fd, a[1], false);
}

/* File class>>primExists: and System>>fileExists: (which lets a workload wait for a tracer
 * or a test harness without busy CPU): a path with a NUL names no file, and is refused
 * rather than checked cut short. */
static PrimResult p_file_exists(Value *a, uint32_t n)
{
    (void)n;
    const char *path = cstring_arg(a[1]);
    if (!path) return prim_fail(a, "exists: needs a path String without NUL");
    struct stat st;
    a[0] = bool_value(stat(path, &st) == 0);
    return PRIM_OK;
}

static PrimResult p_file_delete(Value *a, uint32_t n)
{
    (void)n;
    const char *path = cstring_arg(a[1]);
    if (!path) return prim_fail(a, "delete: needs a path String without NUL");
    return answer_errno(a, unlink(path) ? errno : 0);
}

static PrimResult p_file_seek(Value *a, off_t to, int whence)
{
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    off_t r = lseek(fd, to, whence);
    if (r < 0) return answer_errno(a, errno);
    a[0] = int_value((int64_t)r);
    return PRIM_OK;
}

static PrimResult p_file_position(Value *a, uint32_t n) { (void)n; return p_file_seek(a, 0, SEEK_CUR); }

static PrimResult p_file_set_position(Value *a, uint32_t n)
{
    (void)n;
    if (!is_int(a[1]) || int_val(a[1]) < 0) return prim_fail(a, "position: needs an Integer >= 0");
    return p_file_seek(a, (off_t)int_val(a[1]), SEEK_SET);
}

static PrimResult p_file_size(Value *a, uint32_t n)
{
    (void)n;
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    struct stat st;
    if (fstat(fd, &st)) return answer_errno(a, errno);
    a[0] = int_value((int64_t)st.st_size);
    return PRIM_OK;
}

/* Everything from the position to the end, in one String. */
static PrimResult p_file_read_all(Value *a, uint32_t n)
{
    (void)n;
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    size_t len = 0, cap = 64u << 10;
    char *buf = vm_xmalloc(cap);
    for (;;) {
        if (len == cap) buf = vm_xrealloc(buf, cap *= 2);
        SQ_IO_START();
        ssize_t got = read(fd, buf + len, cap - len);
        SQ_IO_END(SQ_IO_READ, fd, got, SQ_IO_KIND_OF_OP);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int err = errno;
            free(buf);
            return answer_errno(a, err);
        }
        if (got == 0) break;
        len += (size_t)got;
    }
    a[0] = str_new(buf, len);
    free(buf);
    return PRIM_OK;
}

/* ---- Sockets ---- */

/* A new non-blocking TCP socket; after EMFILE, once more when a collection freed some. */
static int new_socket(int family)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
        io_reclaim(true);
        fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    }
    return fd;
}

/* Requests and replies are small writes: send each at once (Nagle's delay, with the
 * peer's delayed ACK, would cost 40 ms a round trip). */
static void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* primConnect: host port: p -- a Socket whose connection is under way (wait to write,
 * then primConnectError), or an error. */
static PrimResult p_connect(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = handle_class(a[0]);
    if (!c) return prim_fail(a, "connect:port: needs a subclass of IOHandle");
    struct sockaddr_storage ss;
    socklen_t len;
    int err = parse_address(a[1], a[2], &ss, &len);
    if (err) return answer_errno(a, err);
    io_reclaim(false);
    int fd = new_socket(ss.ss_family);
    if (fd < 0) return answer_errno(a, errno);
    no_delay(fd);
    SQ_IO_START();
    int rc = connect(fd, (struct sockaddr *)&ss, len);
    SQ_IO_END(SQ_IO_CONNECT, fd, rc, SQ_IO_TCP);
    if (rc && errno != EINPROGRESS) {
        err = errno;
        close(fd);
        return answer_errno(a, err);
    }
    return new_handle(a, c, fd, address_name(&ss), true);
}

static PrimResult p_connect_error(Value *a, uint32_t n)
{
    (void)n;
    int fd = io_fd_of(a[0]), err = 0;
    socklen_t len = sizeof err;
    if (fd < 0) return answer_errno(a, EBADF);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)) err = errno;
    return answer_errno(a, err);
}

/* primListen: port on: host -- a listening ServerSocket, or an error. */
static PrimResult p_listen(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = handle_class(a[0]);
    if (!c) return prim_fail(a, "listen:on: needs a subclass of IOHandle");
    struct sockaddr_storage ss;
    socklen_t len;
    int err = parse_address(a[2], a[1], &ss, &len), one = 1;
    if (err) return answer_errno(a, err);
    io_reclaim(false);
    int fd = new_socket(ss.ss_family);
    if (fd < 0) return answer_errno(a, errno);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, SOMAXCONN)) {
        err = errno;
        close(fd);
        return answer_errno(a, err);
    }
    len = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &len);
    return new_handle(a, c, fd, address_name(&ss), true);
}

/* primAccept: socketClass -- the next connection as an instance of socketClass, nil
 * when none is waiting, or an error. */
static PrimResult p_accept(Value *a, uint32_t n)
{
    (void)n;
    ClassInfo *c = handle_class(a[1]);
    if (!c) return prim_fail(a, "accept needs a subclass of IOHandle for the connection");
    io_reclaim(false);
    int fd = io_fd_of(a[0]), conn;
    if (fd < 0) return answer_errno(a, EBADF);
    struct sockaddr_storage ss;
    socklen_t len;
    for (int tries = 0;; tries++) {
        len = sizeof ss;
        SQ_IO_START();
        conn = accept4(fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        SQ_IO_END(SQ_IO_ACCEPT, fd, conn, SQ_IO_KIND_OF_OP);
        if (conn >= 0 || errno == EINTR || errno == ECONNABORTED) {
            if (conn >= 0) break;
            continue;
        }
        if ((errno != EMFILE && errno != ENFILE) || tries) break;
        io_reclaim(true);
    }
    if (conn < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        io_not_ready(fd, IO_DIR_READ);
        a[0] = VM.nil;
        return PRIM_OK;
    }
    if (conn < 0) return answer_errno(a, errno);
    no_delay(conn);
    return new_handle(a, c, conn, address_name(&ss), true);
}

static PrimResult p_local_port(Value *a, uint32_t n)
{
    (void)n;
    int fd = io_fd_of(a[0]);
    if (fd < 0) return answer_errno(a, EBADF);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len)) return answer_errno(a, errno);
    a[0] = int_value(ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                    : ((struct sockaddr_in *)&ss)->sin_port));
    return PRIM_OK;
}

const PrimDef prims_io[] = {
    {"IOHandle class", "errnoText:", p_errno_text},
    {"IOHandle", "primClose", p_close}, {"IOHandle", "primRead:", p_read},
    {"IOHandle", "primWrite:from:", p_write}, {"IOHandle", "primWait:timeout:", p_wait},
    {"File class", "primOpen:mode:", p_file_open}, {"File class", "primExists:", p_file_exists},
    {"File class", "primDelete:", p_file_delete}, {"System", "fileExists:", p_file_exists},
    {"File", "primPosition", p_file_position}, {"File", "primPosition:", p_file_set_position},
    {"File", "primSize", p_file_size}, {"File", "primReadAll", p_file_read_all},
    {"Socket class", "primConnect:port:", p_connect}, {"Socket", "primConnectError", p_connect_error},
    {"ServerSocket class", "primListen:on:", p_listen}, {"ServerSocket", "primAccept:", p_accept},
    {"ServerSocket", "primPort", p_local_port},
    {NULL, NULL, NULL},
};
