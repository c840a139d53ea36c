// SPDX-License-Identifier: BSD-2-Clause
/* sqdoctor - what is wrong with this VM? Records one VM for a while with the family's
 * own tools (sqdoctor_run.h) and counts the storms none of them counts (its own BPF
 * program: doesNotUnderstand: sends and exceptions signalled), then scores a rule per
 * kind of trouble (sqdoctor_rules.h) and prints each with what it names and the command
 * that shows more: as text, as one JSON object (-j), or as a page (--html). */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "sqattach.h"
#include "sqbpf.h"
#include "sqdoctor.h"
#include "sqdoctor.skel.h"
#include "sqdoctor_html.h"
#include "sqdoctor_report.h"
#include "sqdoctor_run.h"
#include "sqnames.h"
#include "sqoutput.h"

#define OPT_HTML 0x2001
#define DEFAULT_DURATION_NS (10ULL * 1000000000)

static struct env {
	struct sq_common c;
	const char *html;	/* --html FILE */
} env;

const char *argp_program_version = "sqdoctor (sqvm tools) " SQTOOLS_VERSION;
static const char doc[] =
"Record one sqvm process for a while, then say what is wrong with it: each rule scores\n"
"0-100 and names the method, class, process or route it points at, with the command\n"
"that shows more.\n"
"\n"
"USAGE: sqdoctor [-h] -p PID [-d DURATION] [-j] [--html FILE] [-v]\n"
"\n"
"EXAMPLES:\n"
"    sqdoctor -p 185               # record 10 s, then the report\n"
"    sqdoctor -p 185 -d 60s        # record a minute\n"
"    sqdoctor -p 185 -j            # one JSON object: the rules and their evidence\n"
"    sqdoctor -p 185 --html r.html # and a page with the evidence as charts\n";

static const struct argp_option opts[] = {
	SQ_COMMON_OPTIONS,
	{ "html", OPT_HTML, "FILE", 0, "Also write the report as a self-contained HTML page", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int ret = sq_parse_common_opt(key, arg, state, &env.c);

	if (ret != ARGP_ERR_UNKNOWN)
		return ret;
	switch (key) {
	case OPT_HTML:
		env.html = arg;
		break;
	case ARGP_KEY_END:
		if (!env.c.pid)
			argp_error(state, "sqdoctor examines one VM: give its PID with -p");
		if (env.c.npositional || env.c.interval_ns)
			argp_error(state, "sqdoctor takes no interval: give the duration with -d");
		if (!env.c.duration_ns)
			env.c.duration_ns = DEFAULT_DURATION_NS;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The recorders: the family's tools, each asked for the evidence of some rules. */
static struct sq_recorder recorders[SQD_NSOURCES] = {
	[SQD_GC] = { .tool = "sqgc", .args = { "-e" }, .final = "\"type\":\"summary\"" },
	[SQD_ALLOC] = { .tool = "sqalloc", .args = { "--sample", "-b", "-n", "0" }, .final = "\"rows\":" },
	[SQD_SCHED] = { .tool = "sqsched", .args = { "-n", "0" }, .final = "\"type\":\"summary\"" },
	[SQD_REQ] = { .tool = "sqreq", .final = "\"type\":\"requests\"" },
	[SQD_IO] = { .tool = "sqio", .args = { "-n", "0" }, .final = "\"type\":\"io\"" },
	/* with --html it writes the flame graph after its report: then wait for its exit */
	[SQD_CPU] = { .tool = "sqprof", .final = "\"mode\":\"cpu\"" },
	[SQD_WALL] = { .tool = "sqprof", .args = { "--wall" }, .final = "\"mode\":\"wall\"" },
};

struct storms {
	struct sqdoctor_bpf *skel;
	struct sq_evidence *e;
	int err;
};

/* At the window's start: the storm probes, those the VM has. */
static void attach_storms(void *ctx)
{
	struct storms *s = ctx;

	if (s->e->have_dnu && sq_attach(&env.c, s->skel->progs.dnu, "method__dnu"))
		s->err = -1, s->e->have_dnu = false;
	if (s->e->have_exceptions && sq_attach(&env.c, s->skel->progs.exception, "exception__signal"))
		s->err = -1, s->e->have_exceptions = false;
}

/* The storms map, its names resolved. */
static void read_storms(struct sqdoctor_bpf *skel, struct sq_evidence *e)
{
	int fd = bpf_map__fd(skel->maps.storms), names_fd = bpf_map__fd(skel->maps.names);
	size_t n = 0;
	struct sqdoctor_key *keys = sq_map_keys(fd, sizeof(*keys), SQDOCTOR_MAX_KEYS, &n);

	e->storms = calloc(n ? n : 1, sizeof(*e->storms));
	e->storms_lost = skel->bss->lost;
	if (!keys || !e->storms) {
		free(keys);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct sqd_storm *s = &e->storms[e->nstorms];
		const char *cls, *scls, *sel;
		__u64 count = 0;
		if (bpf_map_lookup_elem(fd, &keys[i], &count) || !count)
			continue;
		cls = sq_map_name(names_fd, keys[i].pid, keys[i].cls, NULL);
		scls = sq_map_name(names_fd, keys[i].pid, keys[i].sender_cls, NULL);
		sel = sq_map_name(names_fd, keys[i].pid, keys[i].sel, NULL);
		s->kind = keys[i].kind;
		s->count = count;
		snprintf(s->cls, sizeof(s->cls), "%s", cls ? cls : "?");
		if (keys[i].kind == SQDOCTOR_EXCEPTION)
			snprintf(s->sender, sizeof(s->sender), "%s>>%s", scls ? scls : "?", sel ? sel : "?");
		else
			snprintf(s->sender, sizeof(s->sender), "%s", sel ? sel : "?");
		e->nstorms++;
	}
	free(keys);
}

/* Every recorder's output as JSON lines; a line that does not parse is dropped. */
static void parse_recorders(struct sq_evidence *e)
{
	for (int s = 0; s < SQD_NSOURCES; s++) {
		struct sq_recorder *r = &recorders[s];
		struct sqd_lines *l = &e->src[s];
		char *line = r->out, *nl;
		const char *why = sq_recorder_error(r);

		l->ok = r->ok;
		if (!l->ok)
			snprintf(l->why, sizeof(l->why), "%s", why ? why : r->tracing ? "no report" : "it did not attach");
		for (; line && *line; line = nl ? nl + 1 : NULL) {
			struct sq_jv *v, **grown;
			nl = strchr(line, '\n');
			v = sq_jv_parse(line, nl ? (size_t)(nl - line) : strlen(line), NULL, 0);
			if (!v)
				continue;
			grown = realloc(l->v, (l->n + 1) * sizeof(*l->v));
			if (!grown) {
				sq_jv_free(v);
				break;
			}
			l->v = grown;
			l->v[l->n++] = v;
		}
	}
}

static void free_evidence(struct sq_evidence *e)
{
	for (int s = 0; s < SQD_NSOURCES; s++) {
		for (int i = 0; i < e->src[s].n; i++)
			sq_jv_free(e->src[s].v[i]);
		free(e->src[s].v);
	}
	free(e->storms);
}

/* The folder this binary is in: where the other tools are. */
static int tool_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *d;

	if (n <= 0)
		return -1;

	buf[n] = 0;
	d = dirname(buf);	/* in place, or a static "." */
	memmove(buf, d, strlen(d) + 1);
	return 0;
}

static bool has_probe(const char *probe)
{
	for (int i = 0; i < env.c.nbins; i++)
		for (int j = 0; j < env.c.bins[i].probes.nprobes; j++)
			if (!strcmp(env.c.bins[i].probes.probe[j].name, probe))
				return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct argp argp = { opts, parse_arg, NULL, doc, NULL, NULL, NULL };
	LIBBPF_OPTS(bpf_object_open_opts, open_opts);
	static struct sq_evidence e;
	static struct sq_finding findings[SQD_NRULES];
	struct storms storms = { .e = &e };
	struct sq_window w = { 0 };
	char dir[PATH_MAX], svgdir[] = "/tmp/sqdoctor.XXXXXX", svg[PATH_MAX] = "";
	struct sqdoctor_bpf *skel;
	__u64 reported;
	int err;

	err = sq_start(&env.c, "sqdoctor", &argp, argc, argv, &open_opts);
	if (err)
		return err;
	if (tool_dir(dir, sizeof(dir))) {
		sq_error("cannot find the folder of the other tools: %s", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	skel = sqdoctor_bpf__open_opts(&open_opts);
	if (!skel) {
		sq_error("cannot open the BPF object: %s", strerror(errno));
		return SQ_EXIT_ERROR;
	}
	sq_skip_unused_maps(skel->skeleton);
	err = sqdoctor_bpf__load(skel);
	if (err) {
		sq_error("cannot load the BPF programs: %s", strerror(-err));
		goto cleanup;
	}
	storms.skel = skel;
	e.pid = env.c.pid;
	e.have_dnu = has_probe("method__dnu");
	e.have_exceptions = has_probe("exception__signal");
	sq_cmdline(e.pid, e.cmdline, sizeof(e.cmdline));
	if (env.html && mkdtemp(svgdir)) {
		snprintf(svg, sizeof(svg), "%s/cpu.svg", svgdir);
		recorders[SQD_CPU].args[0] = "--svg";
		recorders[SQD_CPU].args[1] = svg;
		recorders[SQD_CPU].final = NULL;
	}
	fprintf(stderr, "Recording PID %d for %.1f s with sqgc, sqalloc, sqsched, sqreq, sqio and sqprof... "
		"Hit Ctrl-C to end.\n", e.pid, env.c.duration_ns / 1e9);
	err = sq_record(recorders, SQD_NSOURCES, e.pid, env.c.duration_ns, dir, env.c.verbose,
			attach_storms, &storms, &w);
	if (err)
		goto cleanup;
	e.begin_ns = w.begin_ns;
	e.end_ns = w.end_ns;
	e.seconds = (w.end_ns - w.begin_ns) / 1e9;
	read_storms(skel, &e);
	parse_recorders(&e);
	sqd_apply_rules(&e, findings);
	if (env.c.format == SQ_FORMAT_JSON)
		sqd_print_json(stdout, &e, &w, findings);
	else
		sqd_print_text(stdout, &e, &w, findings);
	if (env.html && (err = sqd_write_html(env.html, &e, findings, svg[0] ? svg : NULL)))
		sq_error("cannot write %s: %s", env.html, strerror(-err));
	reported = sq_mono_ns();
	if (env.c.verbose)
		fprintf(stderr, "sqdoctor: the report took %.3f s after the recording\n",
			(reported - w.end_ns) / 1e9);
	/* then the detaching, ours and the recorders' (about 0.1 s a probe) */
	sq_detach_all();
	sq_record_finish(recorders, SQD_NSOURCES);
cleanup:
	if (svg[0]) {
		unlink(svg);
		rmdir(svgdir);
	}
	sq_detach_all();
	free_evidence(&e);
	sq_recorders_free(recorders, SQD_NSOURCES);
	sq_names_free();
	sqdoctor_bpf__destroy(skel);
	return err ? SQ_EXIT_ERROR : 0;
}
