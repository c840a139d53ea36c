// SPDX-License-Identifier: BSD-2-Clause
/* printable_test.c - sq_printable and sq_utf8_seq (tools/sqoutput.c): what a name from a
 * target becomes on root's terminal, byte for byte. */
#include "sqoutput.h"

#include <stdio.h>
#include <string.h>

static int failed, passed;

static void check(const char *in, const char *want)
{
	const char *got = sq_printable(in);

	if (strcmp(got, want) == 0) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL sq_printable: got \"%s\", want \"%s\"\n", got, want);
}

static void check_seq(const char *in, int want)
{
	int got = sq_utf8_seq((const unsigned char *)in, strlen(in));

	if (got == want) {
		passed++;
		return;
	}
	failed++;
	printf("FAIL sq_utf8_seq of %02x...: got %d, want %d\n", (unsigned char)in[0], got, want);
}

int main(void)
{
	char longname[3000];
	const char *a, *b;

	check("Foo>>bar:", "Foo>>bar:");
	check("\x1b[2J\a", "\\x1b[2J\\x07");             /* C0: clear screen, bell */
	check("a\nb\tc\x7f", "a\\x0ab\\x09c\\x7f");      /* newlines and tabs, DEL */
	check("csi\x9b" "1m", "csi\\x9b1m");              /* a raw C1 byte (8-bit CSI) */
	check("csi\xc2\x9b" "1m", "csi\\xc2\\x9b1m");     /* C1 as UTF-8 (U+009B) */
	check("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	check("\xed\xa0\x80", "\\xed\\xa0\\x80");         /* a surrogate */
	check("\xe0\x80\xaf", "\\xe0\\x80\\xaf");         /* overlong '/' */
	check("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	check("\xc3", "\\xc3");                            /* cut short */
	check("back\\x1b", "back\\\\x1b");                 /* not an escape: a backslash */
	check(NULL, "?");
	check("", "");

	memset(longname, '\x1b', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	a = sq_printable(longname);
	if (strlen(a) <= SQ_PRINTABLE_MAX && strcmp(a + strlen(a) - 3, "...") == 0 &&
	    strncmp(a, "\\x1b\\x1b", 8) == 0)
		passed++;
	else {
		failed++;
		printf("FAIL a long name: %zu bytes, ends \"%s\"\n", strlen(a), a + strlen(a) - 3);
	}
	/* several names in one printf: each its own buffer */
	a = sq_printable("one");
	b = sq_printable("two");
	if (strcmp(a, "one") == 0 && strcmp(b, "two") == 0)
		passed++;
	else {
		failed++;
		printf("FAIL two names at once: \"%s\" \"%s\"\n", a, b);
	}

	check_seq("A", 1);
	check_seq("\xc2\xa0", 2);
	check_seq("\xc1\xbf", 0);
	check_seq("\xef\xbf\xbd", 3);
	check_seq("\xf0\x90\x80\x80", 4);
	check_seq("\xf0\x8f\xbf\xbf", 0);
	check_seq("\xf4\x8f\xbf\xbf", 4);
	check_seq("\xf5\x80\x80\x80", 0);
	check_seq("\xe2\x82", 0);

	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
