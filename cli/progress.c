/*
 * progress.c - progress display on stderr, for `vmctl create` and
 * `vmctl scrub --wait`.
 *
 * On a terminal: one line redrawn in place (phase, bar, bytes done /
 * total, rate, and what holds it up), cut to the terminal's width so
 * that it never wraps.  Otherwise plain lines: one at each phase change
 * and at most one a second in between, so that logs stay readable.
 *
 * The rate is the one the caller measured where the work happens (the
 * daemon times the populate as its progress arrives), shown only when
 * there was real work to time (rate_meaningful); when the caller has
 * none (scrub --wait), it is measured here from the samples.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "vmctl.h"

#define BAR_MAX		30
#define BAR_NOTE	12	/* with a note after the figures */
#define LINE_MAX_	512

struct progress {
	bool	tty;
	bool	drawn;		/* a bar is on the current line */
	char	phase[32];
	char	note[256];
	char	explained[256];	/* the last explanation said */
	double	last_draw;	/* seconds */
	double	last_t;		/* time and count of the last sample */
	uint64_t last_done;
	double	rate;		/* measured here: smoothed units per second */
	bool	worked;		/* a note said what held the work up */
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

/* A rate from our own samples, for callers that measure none. */
static void
local_rate(struct progress *p, uint64_t done, bool changed, double t)
{
	double dt = t - p->last_t, inst;

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
}

/*
 * Whether a rate the caller measured says anything: the work it is
 * over took the daemon at least RATE_MIN_SECONDS (done / rate), and, in
 * bytes, moved at least RATE_MIN_BYTES.  A populate of clean memory
 * that took microseconds would otherwise show as "2.83 TiB/s", a
 * division by a duration below the clocks' noise.  Work the daemon said
 * held it up (a note: scrubbing dirty memory inline, waiting for the
 * scrubber) is real work whatever its duration (`worked`), so that
 * what is shown does not hang on how fast this machine was.
 */
#define RATE_MIN_SECONDS	0.1
#define RATE_MIN_BYTES		(64ull << 20)

static bool
rate_meaningful(const struct progress_info *in, bool bytes, bool worked)
{
	if (!(in->rate > 0) || in->rate > 1e18)
		return false;
	if (bytes && in->done < RATE_MIN_BYTES)
		return false;
	return worked || (double)in->done / in->rate >= RATE_MIN_SECONDS;
}

/* Columns of the terminal on stderr; 80 when it does not say. */
static int
term_cols(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
		return ws.ws_col;
	return 80;
}

/* Say `explain` on a line of its own, above the bar, once. */
static void
explain_once(struct progress *p, const char *explain)
{
	if (!explain || !strcmp(explain, p->explained))
		return;
	snprintf(p->explained, sizeof(p->explained), "%s", explain);
	if (p->tty && p->drawn)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "%s\n", explain);
	p->drawn = false;
}

/*
 * The terminal line.  The bar is shorter when a note follows, so that an
 * 80-column terminal still shows the figures; the bar's width stays the
 * same while the note does.
 */
static void
draw_line(const struct progress_info *in, const char *phase,
    const char *pct, const char *done, const char *total, const char *rate,
    const char *note)
{
	char line[LINE_MAX_], bar[BAR_MAX + 1];
	int cols = term_cols(), width = note[0] ? BAR_NOTE : BAR_MAX, fill, n;

	if (!in->bar) {
		n = snprintf(line, sizeof(line), "%-9s %s", phase, note);
	} else {
		fill = in->total ? (int)((double)in->done / (double)in->total *
		    width) : 0;
		if (fill > width)
			fill = width;
		for (int i = 0; i < width; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[width] = '\0';
		n = snprintf(line, sizeof(line), "%-9s [%s] %4s  %s / %s%s%s%s%s",
		    phase, bar, pct, done, total, rate[0] ? "  " : "", rate,
		    note[0] ? "  " : "", note);
	}
	/* Never wrap: a wrapped line cannot be redrawn in place. */
	if (n >= cols)
		line[cols - 1] = '\0';
	fprintf(stderr, "\r\033[K%s", line);
}

void
progress_show(struct progress *p, const struct progress_info *in)
{
	char a[32], b[32], r[32], pct[8];
	const char *phase = in->phase ? in->phase : "";
	const char *note = in->note ? in->note : "";
	bool changed, bytes = !in->unit || !strcmp(in->unit, "bytes");
	double t = now_s(), rate;

	if (!p)
		return;
	changed = strcmp(phase, p->phase) != 0 || strcmp(note, p->note) != 0;
	local_rate(p, in->done, strcmp(phase, p->phase) != 0, t);
	snprintf(p->phase, sizeof(p->phase), "%s", phase);
	snprintf(p->note, sizeof(p->note), "%s", note);
	rate = in->have_rate ? in->rate : p->rate;
	r[0] = '\0';
	if (note[0])
		p->worked = true;
	if (in->have_rate ? rate_meaningful(in, bytes, p->worked) :
	    p->rate > 0) {
		if (bytes)
			fmt_rate(rate, r, sizeof(r));
		else
			fmt_count_rate(rate, r, sizeof(r));
	}
	fmt_pct((double)in->done, (double)in->total, pct, sizeof(pct));
	amount(in->done, in->unit, a, sizeof(a));
	amount(in->total, in->unit, b, sizeof(b));
	explain_once(p, in->explain);

	if (p->tty) {
		if (!changed && p->drawn && in->done != in->total &&
		    t - p->last_draw < 0.1)
			return;
		draw_line(in, phase, pct, a, b, r, note);
		p->drawn = true;
	} else {
		if (!changed && (in->done == p->printed_done ||
		    (in->done != in->total && t - p->last_draw < 1.0)))
			return;
		/* A phase with nothing to say yet gets no line of its own. */
		if (in->total == 0 && !note[0])
			return;
		p->printed_done = in->done;
		if (in->total == 0 || !in->bar)
			fprintf(stderr, "%s%s%s\n", phase, note[0] ? ": " : "",
			    note);
		else
			fprintf(stderr, "%s: %s of %s (%s)%s%s%s%s\n", phase,
			    a, b, pct, r[0] ? ", " : "", r, note[0] ? "; " : "",
			    note);
	}
	fflush(stderr);
	p->last_draw = t;
}

void
progress_update(struct progress *p, const char *phase, uint64_t done,
    uint64_t total, const char *unit)
{
	struct progress_info in = { .phase = phase, .done = done,
	    .total = total, .unit = unit, .bar = true };

	progress_show(p, &in);
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
