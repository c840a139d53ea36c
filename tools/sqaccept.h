// SPDX-License-Identifier: BSD-2-Clause
/* sqaccept.h - HTTP content negotiation (RFC 9110, 12.5.1): which of the media types a
 * server offers an Accept header prefers. What an exporter needs to serve OpenMetrics to
 * the scrapers that ask for it and the Prometheus text format to every other. */
#ifndef SQACCEPT_H
#define SQACCEPT_H

/* The offer (an index into offers, each "type/subtype; name=value; ...") that accept,
 * an Accept header's value (several headers joined with commas), prefers:
 *
 *   - a media range matches an offer if its type and subtype are the offer's or "*", and
 *     each of its parameters (before q) is one the offer has with the same value (names,
 *     types and values compared without case; values may be quoted);
 *   - an offer's weight is the q (0 to 1, at most three decimals; 1 if absent) of the
 *     most specific range that matches it (type/subtype over type / *, over * / *, more
 *     parameters over fewer; the first of equals);
 *   - the offer of the highest weight above 0 wins; between equals, the one whose range
 *     is more specific, then the one whose range comes first, then the first offer.
 *
 * A range that cannot be read (no slash, a bad q) is skipped. -1 if no offer has a
 * weight above 0; a missing or empty header accepts anything: 0, the first offer. */
int sq_accept_choose(const char *accept, const char *const *offers, int noffers);

#endif
