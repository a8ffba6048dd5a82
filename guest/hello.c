/*
 * hello.c - the hello guest: a freestanding PVH kernel for tests on Xen.
 *
 * It says which domain it is, touches all of its RAM, says how much, and
 * powers itself off with SCHEDOP_shutdown.  See README.md for what it
 * does and does not do.
 */
#include <stddef.h>
#include <string.h>

#include "cons.h"
#include "mem.h"
#include "ptw.h"
#include "xen.h"

#define CMDLINE_MAX	256

extern char __image_start[], __image_end[];

/* Called from entry.S in long mode, with the start info's address. */
void hello_main(uint32_t start_info_paddr);

/* Value of "key=" as an unsigned number with an optional K/M/G suffix. */
static int
cmdline_num(const char *cmdline, const char *key, uint64_t *ret,
    uint64_t unit)
{
	size_t klen = strlen(key);
	const char *p = cmdline;
	uint64_t v = 0;
	int digits = 0;

	while (*p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, key, klen) == 0 && p[klen] == '=')
			break;
		while (*p && *p != ' ')
			p++;
	}
	if (*p == '\0')
		return -1;
	for (p += klen + 1; *p >= '0' && *p <= '9'; p++, digits++)
		v = v * 10 + (uint64_t)(*p - '0');
	if (digits == 0)
		return -1;
	switch (*p) {
	case 'K': case 'k': unit = 1ull << 10; break;
	case 'M': case 'm': unit = 1ull << 20; break;
	case 'G': case 'g': unit = 1ull << 30; break;
	default: break;
	}
	*ret = v * unit;
	return 0;
}

/* True if `word` stands alone on the command line. */
static bool
cmdline_word(const char *cmdline, const char *word)
{
	size_t len = strlen(word);
	const char *p = cmdline;

	while (*p) {
		while (*p == ' ')
			p++;
		if (strncmp(p, word, len) == 0 && (p[len] == ' ' || p[len] == '\0'))
			return true;
		while (*p && *p != ' ')
			p++;
	}
	return false;
}

/*
 * The memory map from the first source that has one.  "memsrc=hypercall"
 * or "memsrc=cmdline" skips the sources before it, so tests can exercise
 * the fallbacks on a toolstack that provides everything.
 */
static int
find_memory(const struct hvm_start_info *si, const char *cmdline,
    struct mem_map *map)
{
	uint64_t mem = 0;
	int skip = 0;

	if (cmdline_word(cmdline, "memsrc=hypercall"))
		skip = 1;
	else if (cmdline_word(cmdline, "memsrc=cmdline"))
		skip = 2;
	if (skip < 1 && mem_from_start_info(si, map) == 0)
		return 0;
	if (skip < 2 && mem_from_hypercall(map) == 0)
		return 0;
	if (cmdline_num(cmdline, "mem", &mem, 1ull << 20) == 0 &&
	    mem_from_size(mem, map) == 0)
		return 0;
	return -1;
}

/*
 * On Xen a vCPU halted with interrupts off is taken down, and a domain
 * with no vCPU up is powered off ("All CPUs offline"): the end either way.
 */
static void
halt(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

void
hello_main(uint32_t start_info_paddr)
{
	const struct hvm_start_info *si;
	static char cmdline[CMDLINE_MAX];
	struct xg_info xen;
	struct mem_map map;
	struct mem_touch t;
	uint64_t domid = 0, rounds = 0;
	bool have_domid, ring;
	long rc;

	if (xg_init(&xen) != 0) {
		/* The debug port still reaches an emulator's log, if any. */
		cons_printf("vmbuild-guest: no Xen CPUID leaves or hypercall "
		    "page; halting\n");
		halt();
	}
	ring = cons_ring_init();

	/* Anything beyond the identity map would fault: treat as absent. */
	si = (const struct hvm_start_info *)(uintptr_t)start_info_paddr;
	if (si == NULL || si->magic != XEN_HVM_START_MAGIC_VALUE)
		si = NULL;
	if (si != NULL && si->cmdline_paddr != 0 &&
	    si->cmdline_paddr < MEM_MAP_LIMIT - CMDLINE_MAX) {
		strncpy(cmdline, (const char *)(uintptr_t)si->cmdline_paddr,
		    sizeof(cmdline) - 1);
	}

	/* CPUID is Xen's own word; "domid=" is a toolstack's fallback. */
	have_domid = xen.have_domid;
	domid = xen.domid;
	if (!have_domid && cmdline_num(cmdline, "domid", &domid, 1) == 0)
		have_domid = true;
	if (have_domid)
		cons_printf("vmbuild-guest: hello from domain %llu\n",
		    (unsigned long long)domid);
	else
		cons_printf("vmbuild-guest: hello from domain ? "
		    "(no CPUID domid, no domid=)\n");

	/* Xen splits debug-port lines at 78 characters: keep them short. */
	cons_printf("vmbuild-guest: Xen %u.%u, start_info %s v%u at 0x%x\n",
	    xen.version >> 16, xen.version & 0xffff, si ? "ok" : "bad/none",
	    si ? si->version : 0, start_info_paddr);
	cons_printf("vmbuild-guest: cmdline: %.56s\n", cmdline);
	cons_printf("vmbuild-guest: PV console ring: %s\n", ring ? "yes" : "no");

	if (find_memory(si, cmdline, &map) != 0) {
		cons_printf("vmbuild-guest: no memory map found, "
		    "nothing touched\n");
		map.nr = 0;
		map.source = "none";
	}

	mem_touch_all(&map, (uintptr_t)__image_start, (uintptr_t)__image_end,
	    &t);
	cons_printf("vmbuild-guest: RAM %llu MiB in %u ranges, from %s\n",
	    (unsigned long long)(mem_total(&map) >> 20), map.nr, map.source);
	cons_printf("vmbuild-guest: touched %llu MiB, %llu errors\n",
	    (unsigned long long)(t.touched >> 20),
	    (unsigned long long)t.errors);
	cons_printf("vmbuild-guest: (own image %llu KiB; %llu MiB above 64 GiB)\n",
	    (unsigned long long)(t.image >> 10),
	    (unsigned long long)(t.unmapped >> 20));
	if (t.errors)
		cons_printf("vmbuild-guest: first bad page at 0x%llx\n",
		    (unsigned long long)t.first_error);

	/* "ptwrite=N": rewrite our own page-table entries (ptw.c). */
	if (cmdline_num(cmdline, "ptwrite", &rounds, 1) == 0) {
		struct ptw_result pr;

		if (ptw_run(rounds, &pr) != 0)
			cons_printf("vmbuild-guest: ptwrite: page tables not "
			    "as entry.S built them\n");
		else
			cons_printf("vmbuild-guest: ptwrite %llu+%llu rounds, "
			    "%llu bad reads\n",
			    (unsigned long long)pr.flood_rounds,
			    (unsigned long long)pr.zero_rounds,
			    (unsigned long long)pr.bad_reads);
	}

	/*
	 * "spin": keep this vCPU busy until destroyed.  The lab's busy host
	 * (tests/lab/xenbench.sh): while a guest's vCPU is runnable on every
	 * physical CPU, Xen's idle loop, which is where freed memory is
	 * scrubbed in the background, does not run, and a populate meets
	 * dirty pages and scrubs them inline.  Every 65536 pauses a CPUID,
	 * which Xen always intercepts: the physical CPU goes back to Xen at
	 * least that often, not only when an interrupt makes it exit.  CI's
	 * run at f400aaf lost the whole lab host, Xen and dom0 silent, with
	 * such a guest spinning on every CPU; the emulated CPU's exits on
	 * interrupts are what a pause-only loop relied on (a lead, not a
	 * finding: tests/lab/README.md).  Not more often: each exit is a
	 * world switch, where the emulated CPU 0 now and then triple-faults
	 * a guest (at one every 1024, the hog on CPU 0 died so in the first
	 * run).
	 */
	if (cmdline_word(cmdline, "spin")) {
		unsigned int n = 0;
		uint32_t r[4];

		cons_printf("vmbuild-guest: spinning, domain %llu waits to be "
		    "destroyed\n", (unsigned long long)domid);
		for (;;) {
			__asm__ volatile("pause");
			if (++n % 65536 == 0)
				xg_cpuid(0, 0, r);
		}
	}

	/*
	 * "hold": stay up until destroyed, so a test can time the destroy
	 * of a live domain.  Nothing raises interrupts here (no timer is
	 * armed, no upcall set), so the vCPU sleeps in hlt.
	 */
	if (cmdline_word(cmdline, "hold")) {
		cons_printf("vmbuild-guest: holding, domain %llu waits to be "
		    "destroyed\n", (unsigned long long)domid);
		for (;;)
			__asm__ volatile("sti; hlt; cli");
	}

	cons_printf("vmbuild-guest: done, domain %llu powering off\n",
	    (unsigned long long)domid);
	rc = xg_sched_shutdown(SHUTDOWN_poweroff);
	cons_printf("vmbuild-guest: SCHEDOP_shutdown failed: %ld; halting\n",
	    rc);
	halt();
}
