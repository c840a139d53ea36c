// SPDX-License-Identifier: BSD-2-Clause
/* traceparent.c - W3C Trace Context's traceparent (traceparent.h). */
#include "traceparent.h"

#include <time.h>
#include <unistd.h>

/* Lower-case hex only: the specification's HEXDIGLC. */
static bool hex(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint64_t)(c - 'a' + 10);
        else return false;
    }
    *out = v;
    return true;
}

bool traceparent_parse(const char *s, size_t n, TraceContext *t)
{
    uint64_t version, flags;
    if (n < TRACEPARENT_LEN || !hex(s, 2, &version) || version == 0xff) return false;
    /* version 00 is exactly 55 characters; a later one may go on after a dash */
    if (version == 0 ? n != TRACEPARENT_LEN : (n > TRACEPARENT_LEN && s[TRACEPARENT_LEN] != '-')) return false;
    if (s[2] != '-' || s[35] != '-' || s[52] != '-') return false;
    if (!hex(s + 3, 16, &t->traceHi) || !hex(s + 19, 16, &t->traceLo) || !hex(s + 36, 16, &t->parent) ||
        !hex(s + 53, 2, &flags))
        return false;
    if ((t->traceHi | t->traceLo) == 0 || t->parent == 0) return false;
    t->flags = (uint8_t)flags;
    t->span = 0;
    return true;
}

/* splitmix64's finaliser: a bijection, so distinct counters give distinct ids */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t traceparent_new_span(void)
{
    static uint64_t next;
    if (!next) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        next = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
    }
    uint64_t id;
    do id = mix(next++); while (!id);
    return id;
}

static void put_hex(char *o, uint64_t v, int digits)
{
    static const char d[] = "0123456789abcdef";
    for (int i = digits - 1; i >= 0; i--, v >>= 4) o[i] = d[v & 15];
}

void traceparent_format(const TraceContext *t, uint64_t span, char *buf)
{
    buf[0] = '0', buf[1] = '0', buf[2] = '-';
    put_hex(buf + 3, t->traceHi, 16);
    put_hex(buf + 19, t->traceLo, 16);
    buf[35] = '-';
    put_hex(buf + 36, span, 16);
    buf[52] = '-';
    put_hex(buf + 53, t->flags, 2);
    buf[TRACEPARENT_LEN] = 0;
}
