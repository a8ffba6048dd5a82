/*
 * progress.c - progress display on stderr, for `vmctl create` and
 * `vmctl scrub --wait`.
 *
 * On a terminal: one bar redrawn in place (bytes done / total, phase,
 * rate).  Otherwise plain lines: one at each phase change and at most
 * one a second in between, so that logs stay readable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmctl.h"

#define BAR_WIDTH	30

struct progress {
	bool	tty;
	bool	drawn;		/* a bar is on the current line */
	char	phase[32];
	double	last_draw;	/* seconds */
	double	last_t;		/* time and bytes of the last sample */
	uint64_t last_done;
	double	rate;		/* smoothed units per second */
	uint64_t printed_done;	/* plain mode: what the last line said */
};

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct progress *
progress_new(bool tty)
{
	struct progress *p = calloc(1, sizeof(*p));

	if (p) {
		p->tty = tty;
		p->last_t = now_s();
	}
	return p;
}

/* Amounts in the task's unit: bytes are humanised, others are counts. */
static const char *
amount(uint64_t v, const char *unit, char *buf, size_t len)
{
	if (!unit || !strcmp(unit, "bytes"))
		return fmt_size(v, buf, len);
	snprintf(buf, len, "%llu %s", (unsigned long long)v, unit);
	return buf;
}

void
progress_update(struct progress *p, const char *phase, uint64_t done,
    uint64_t total, const char *unit)
{
	char a[32], b[32], r[32], bar[BAR_WIDTH + 1];
	bool changed, bytes = !unit || !strcmp(unit, "bytes");
	double t = now_s(), dt, inst;
	int i, fill;

	if (!p)
		return;
	if (!phase)
		phase = "";
	changed = strcmp(phase, p->phase) != 0;
	dt = t - p->last_t;
	if (done < p->last_done || changed) {
		p->last_done = done;
		p->last_t = t;
		if (changed)
			p->rate = 0;
	} else if (dt >= 0.2) {
		inst = (double)(done - p->last_done) / dt;
		p->rate = p->rate > 0 ? 0.5 * p->rate + 0.5 * inst : inst;
		p->last_done = done;
		p->last_t = t;
	}
	snprintf(p->phase, sizeof(p->phase), "%s", phase);
	if (bytes)
		fmt_rate(p->rate, r, sizeof(r));
	else
		fmt_count_rate(p->rate, r, sizeof(r));

	if (p->tty) {
		if (!changed && done != total && t - p->last_draw < 0.1)
			return;
		fill = total ? (int)((double)done / (double)total * BAR_WIDTH) :
		    0;
		if (fill > BAR_WIDTH)
			fill = BAR_WIDTH;
		for (i = 0; i < BAR_WIDTH; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[BAR_WIDTH] = '\0';
		fprintf(stderr, "\r\033[K%-9s [%s] %4s  %s / %s  %s", phase,
		    bar, fmt_pct((double)done, (double)total, (char[8]){ 0 },
		    8), amount(done, unit, a, sizeof(a)),
		    amount(total, unit, b, sizeof(b)), r);
		p->drawn = true;
	} else {
		if (!changed && (done == p->printed_done ||
		    (done != total && t - p->last_draw < 1.0)))
			return;
		p->printed_done = done;
		if (total == 0) {
			fprintf(stderr, "%s\n", phase);
			goto drawn;
		}
		fprintf(stderr, "%s: %s of %s (%s)%s%s\n", phase,
		    amount(done, unit, a, sizeof(a)),
		    amount(total, unit, b, sizeof(b)),
		    fmt_pct((double)done, (double)total, (char[8]){ 0 }, 8),
		    p->rate > 0 ? ", " : "", p->rate > 0 ? r : "");
	}
drawn:
	fflush(stderr);
	p->last_draw = t;
}

void
progress_end(struct progress *p)
{
	if (p && p->tty && p->drawn) {
		fputc('\n', stderr);
		fflush(stderr);
		p->drawn = false;
	}
}

void
progress_free(struct progress *p)
{
	progress_end(p);
	free(p);
}
