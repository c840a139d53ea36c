// SPDX-License-Identifier: BSD-2-Clause
/* sqperfetto.c - the packets, clock and interned names the Perfetto writers share
 * (sqperfetto.h).
 *
 * Packets do not carry SEQ_NEEDS_INCREMENTAL_STATE (it tells a reader which packets to
 * skip after a loss, and a file that one writer streams loses none): 2 bytes a packet. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "sqoutput.h"
#include "sqperfetto.h"

#define SEQUENCE 1	/* the one sequence all packets are on */

void sqperfetto_packet_open(struct sqperfetto *p, bool has_ts, __u64 ts_ns)
{
	sqpb_reset(&p->pb);
	sqpb_open(&p->pb, TRACE_PACKET);
	if (has_ts && ts_ns >= p->clock) {
		sqpb_varint(&p->pb, PACKET_TIMESTAMP, ts_ns - p->clock);
		p->clock = ts_ns;
	} else if (has_ts) {
		sqpb_varint(&p->pb, PACKET_TIMESTAMP, ts_ns);
		sqpb_varint(&p->pb, PACKET_TIMESTAMP_CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
	}
	sqpb_varint(&p->pb, PACKET_SEQUENCE_ID, SEQUENCE);
}

void sqperfetto_packet_close(struct sqperfetto *p)
{
	sqpb_close(&p->pb);
	if (p->pb.failed)
		p->unwritten++;
	else
		fwrite(p->pb.data, 1, p->pb.len, p->out);
}

void sqperfetto_start(struct sqperfetto *p, FILE *out, __u64 base_ns, size_t max_names, size_t max_name_bytes)
{
	p->out = out;
	p->max_names = max_names;
	p->max_name_bytes = max_name_bytes;
	sqperfetto_packet_open(p, false, 0);
	sqpb_varint(&p->pb, PACKET_SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	sqpb_open(&p->pb, PACKET_DEFAULTS);
	sqpb_varint(&p->pb, DEFAULTS_TIMESTAMP_CLOCK_ID, CLOCK_DELTAS);
	sqpb_close(&p->pb);
	sqpb_open(&p->pb, PACKET_CLOCK_SNAPSHOT);
	sqpb_open(&p->pb, SNAPSHOT_CLOCKS);
	sqpb_varint(&p->pb, CLOCK_ID, CLOCK_DELTAS);
	sqpb_varint(&p->pb, CLOCK_TIMESTAMP, base_ns);
	sqpb_varint(&p->pb, CLOCK_IS_INCREMENTAL, 1);
	sqpb_close(&p->pb);
	sqpb_open(&p->pb, SNAPSHOT_CLOCKS);
	sqpb_varint(&p->pb, CLOCK_ID, BUILTIN_CLOCK_MONOTONIC);
	sqpb_varint(&p->pb, CLOCK_TIMESTAMP, base_ns);
	sqpb_close(&p->pb);
	sqpb_varint(&p->pb, SNAPSHOT_PRIMARY_TRACE_CLOCK, BUILTIN_CLOCK_MONOTONIC);
	sqpb_close(&p->pb);
	sqperfetto_packet_close(p);
	p->clock = base_ns;
}

const char *sqperfetto_well_formed(struct sqperfetto *p, const char *s, size_t *len)
{
	size_t n = strlen(s), need = 3 * n + 1, o = 0;

	if (need > p->fixcap) {
		char *grown = realloc(p->fix, need);

		if (!grown)
			return NULL;
		p->fix = grown;
		p->fixcap = need;
	}
	for (size_t i = 0; i < n;) {
		int k = sq_utf8_seq((const unsigned char *)s + i, n - i);

		if (k > 0) {
			memcpy(p->fix + o, s + i, (size_t)k);
			o += (size_t)k, i += (size_t)k;
		} else {
			memcpy(p->fix + o, "\xef\xbf\xbd", 3);
			o += 3, i++;
		}
	}
	p->fix[o] = '\0';
	*len = o;
	return p->fix;
}

__u64 sqperfetto_intern(struct sqperfetto *p, const char *name, size_t len)
{
	size_t had = p->names.n, i;

	/* past the bounds even a name interned already is written whole: the table has no
	 * lookup that would not add it */
	if (had == p->max_names || len > p->max_name_bytes - p->name_bytes)
		return 0;
	i = sq_intern(&p->names, name, len);
	if (i == (size_t)-1)
		return 0;
	if (p->names.n > had) {
		p->name_bytes += len;
		sqpb_open(&p->pb, PACKET_INTERNED_DATA);
		sqpb_open(&p->pb, INTERNED_EVENT_NAMES);
		sqpb_varint(&p->pb, EVENT_NAME_IID, i + 1);
		sqpb_bytes(&p->pb, EVENT_NAME_NAME, name, len);
		sqpb_close(&p->pb);
		sqpb_close(&p->pb);
	}
	return i + 1;
}

void sqperfetto_free(struct sqperfetto *p)
{
	sqpb_free(&p->pb);
	sq_intern_free(&p->names);
	free(p->fix);
	p->fix = NULL;
	p->fixcap = 0;
}
