/*
 * rate.h - a rate measured over the last few seconds of samples of a
 * growing count (bytes populated), for progress that says how fast
 * things go now rather than on average.
 */
#ifndef VMBUILDD_RATE_H
#define VMBUILDD_RATE_H

#include <stdbool.h>
#include <stdint.h>

#define RATE_SAMPLES	64

struct rate {
	double		window;		/* seconds */
	double		start;		/* time of the count's 0; 0: none yet */
	unsigned	n, head;	/* samples held; next slot */
	struct {
		double		t;
		uint64_t	v;
	} s[RATE_SAMPLES];
};

/* Measure over `window` seconds, the count being 0 at time `start`. */
void rate_start(struct rate *r, double window, double start);
/* The count is `v` at time `t` (seconds, non-decreasing). */
void rate_sample(struct rate *r, double t, uint64_t v);
/*
 * Units per second over the last `window` seconds before `now` (fewer
 * when the count started less long ago); false when it started too
 * recently for a figure that means something (a tenth of the window).
 */
bool rate_get(const struct rate *r, double now, double *ret);

#endif /* VMBUILDD_RATE_H */
