/*
 * bench-populate: the cost of populate_physmap + decrease_reservation of
 * one 4 KiB page, ROUNDS rounds of N pairs, on a PV domain that never
 * runs (dom0, root).  Prints each round's ns per pair, then the median.
 * For comparing two builds of the same Xen, with and without the series'
 * counters (run.sh, README.md "What the counters cost").
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xenctrl.h>

#define N      2000
#define ROUNDS 9

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    struct xen_domctl_createdomain pv = {
        .max_vcpus = 1, .max_grant_frames = 1,
        .grant_opts = XEN_DOMCTL_GRANT_version(1),
    };
    xc_interface *xch = xc_interface_open(NULL, NULL, 0);
    uint32_t domid = 0;
    double ns[ROUNDS];
    struct timespec t0, t1;
    xen_pfn_t gfn;
    int r, i;

    if ( !xch )
        err(1, "xc_interface_open");
    if ( xc_domain_create(xch, &domid, &pv) || xc_domain_setmaxmem(xch, domid, -1) )
        err(1, "create");
    for ( r = 0; r < ROUNDS; r++ )
    {
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for ( i = 0; i < N; i++ )
        {
            gfn = 0;
            if ( xc_domain_populate_physmap_exact(xch, domid, 1, 0, 0, &gfn) )
                err(1, "populate");
            /* A PV domain: populate gave the frame's MFN, which is what
             * decrease_reservation takes. */
            if ( xc_domain_decrease_reservation_exact(xch, domid, 1, 0, &gfn) )
                err(1, "decrease");
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ns[r] = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / N;
        printf("round %d: %.0f ns per populate+decrease\n", r, ns[r]);
    }
    xc_domain_destroy(xch, domid);
    qsort(ns, ROUNDS, sizeof(*ns), cmp);
    printf("median %.0f ns, min %.0f, max %.0f (%d rounds of %d)\n",
           ns[ROUNDS / 2], ns[0], ns[ROUNDS - 1], ROUNDS, N);
    return 0;
}
