/*
 * cons.c - a minimal printf onto the 0xe9 debug port and the PV console.
 *
 * Formats: %s (with an optional .N precision) %c %d %u %x with optional
 * l / ll, and %%.  No padding: the guest prints a few short lines.
 */
#include <stdarg.h>
#include <stddef.h>

#include "cons.h"
#include "xen.h"

#define DEBUGCONS_PORT	0xe9	/* XEN_HVM_DEBUGCONS_IOPORT */
#define RING_SPIN	1000000	/* give up on a full ring after this */

static volatile struct xencons_interface *ring;
static uint32_t ring_port;

bool
cons_ring_init(void)
{
	uint64_t pfn = 0, port = 0;

	if (xg_hvm_get_param(HVM_PARAM_CONSOLE_PFN, &pfn) != 0 || pfn == 0)
		return false;
	if (xg_hvm_get_param(HVM_PARAM_CONSOLE_EVTCHN, &port) != 0)
		return false;
	/* Identity mapped below 64 GiB (entry.S); toolstacks put it < 4 GiB. */
	if (pfn >= (64ull << 30) >> 12)
		return false;
	ring = (volatile struct xencons_interface *)(uintptr_t)(pfn << 12);
	ring_port = (uint32_t)port;
	return true;
}

/*
 * Copy into the ring's output half; if no console daemon drains it, the
 * ring fills and later output is dropped rather than hanging the guest.
 */
static void
ring_write(const char *s, size_t n)
{
	XENCONS_RING_IDX cons, prod;
	size_t i = 0;
	long spin = RING_SPIN;

	if (ring == NULL)
		return;
	while (i < n) {
		cons = ring->out_cons;
		prod = ring->out_prod;
		__asm__ volatile("" ::: "memory");
		if (prod - cons >= sizeof(ring->out)) {
			if (--spin <= 0)
				break;
			__asm__ volatile("pause");
			continue;
		}
		while (i < n && prod - cons < sizeof(ring->out))
			ring->out[MASK_XENCONS_IDX(prod++, ring->out)] = s[i++];
		__asm__ volatile("" ::: "memory");	/* x86: stores in order */
		ring->out_prod = prod;
		xg_evtchn_send(ring_port);
	}
}

struct buf {
	char	b[256];
	size_t	n;
};

static void
put(struct buf *b, char c)
{
	if (b->n < sizeof(b->b))
		b->b[b->n++] = c;
}

static void
put_str(struct buf *b, const char *s, size_t max)
{
	if (s == NULL)
		s = "(null)";
	while (*s && max--)
		put(b, *s++);
}

static void
put_num(struct buf *b, unsigned long long v, unsigned int base, bool neg)
{
	char tmp[24];
	int i = 0;

	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	if (neg)
		put(b, '-');
	while (i > 0)
		put(b, tmp[--i]);
}

void
cons_printf(const char *fmt, ...)
{
	struct buf b = { .n = 0 };
	unsigned long long u;
	long long s;
	va_list ap;
	size_t i, prec;
	int lng;

	va_start(ap, fmt);
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&b, *fmt);
			continue;
		}
		prec = (size_t)-1;
		if (fmt[1] == '.') {
			fmt++;
			for (prec = 0; fmt[1] >= '0' && fmt[1] <= '9'; fmt++)
				prec = prec * 10 + (size_t)(fmt[1] - '0');
		}
		lng = 0;
		while (*++fmt == 'l')
			lng++;
		switch (*fmt) {
		case 's':
			put_str(&b, va_arg(ap, const char *), prec);
			break;
		case 'c':
			put(&b, (char)va_arg(ap, int));
			break;
		case 'd':
			s = lng >= 2 ? va_arg(ap, long long) :
			    lng ? va_arg(ap, long) : va_arg(ap, int);
			put_num(&b, s < 0 ? 0ull - (unsigned long long)s :
			    (unsigned long long)s, 10, s < 0);
			break;
		case 'u':
		case 'x':
			u = lng >= 2 ? va_arg(ap, unsigned long long) :
			    lng ? va_arg(ap, unsigned long) :
			    va_arg(ap, unsigned int);
			put_num(&b, u, *fmt == 'u' ? 10 : 16, false);
			break;
		case '%':
			put(&b, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&b, '%');
			put(&b, *fmt);
			break;
		}
	}
	va_end(ap);

	for (i = 0; i < b.n; i++)
		xg_outb(DEBUGCONS_PORT, (uint8_t)b.b[i]);
	ring_write(b.b, b.n);
}
