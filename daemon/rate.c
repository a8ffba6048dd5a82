/*
 * rate.c - a windowed rate (see rate.h).
 *
 * Samples closer together than a window / RATE_SAMPLES * 2 replace the
 * newest one, so that the ring always reaches back more than a window
 * however often the count moves.  The rate is what the count grew in
 * the window, divided by the window: a count that stops growing shows a
 * falling rate, down to 0 a window later, which is the truth.
 */
#include <string.h>

#include "rate.h"

void
rate_start(struct rate *r, double window, double start)
{
	memset(r, 0, sizeof(*r));
	r->window = window;
	r->start = start;
}

void
rate_sample(struct rate *r, double t, uint64_t v)
{
	unsigned last = (r->head + RATE_SAMPLES - 1) % RATE_SAMPLES;

	if (r->n > 1 && t - r->s[(last + RATE_SAMPLES - 1) % RATE_SAMPLES].t <
	    2 * r->window / RATE_SAMPLES) {
		r->s[last].t = t;
		r->s[last].v = v;
		return;
	}
	r->s[r->head].t = t;
	r->s[r->head].v = v;
	r->head = (r->head + 1) % RATE_SAMPLES;
	if (r->n < RATE_SAMPLES)
		r->n++;
}

/* The count at time x: the newest sample at or before x, else 0. */
static uint64_t
value_at(const struct rate *r, double x)
{
	for (unsigned i = 1; i <= r->n; i++) {
		unsigned k = (r->head + RATE_SAMPLES - i) % RATE_SAMPLES;

		if (r->s[k].t <= x)
			return r->s[k].v;
	}
	return 0;
}

bool
rate_get(const struct rate *r, double now, double *ret)
{
	double w = now - r->start;
	uint64_t v;

	if (r->start <= 0 || w < r->window / 10)
		return false;
	if (w > r->window)
		w = r->window;
	v = r->n ? r->s[(r->head + RATE_SAMPLES - 1) % RATE_SAMPLES].v : 0;
	*ret = (double)(v - value_at(r, now - w)) / w;
	return true;
}
