/*
 * xen_xcstream.h - a reader of libxc's migration stream v2 (and v3) for
 * an x86 HVM-type (PVH) guest, Xen's docs/specs/libxc-migration-stream:
 * the headers and records checked and bounded (the stream is untrusted),
 * what they ask of the domain handed to callbacks.  No hypercall here
 * (xen_xcrestore.c makes them): the parser alone is unit-tested.
 */
#ifndef VMB_XEN_XCSTREAM_H
#define VMB_XEN_XCSTREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define XCS_PAGE_SIZE		4096u
#define XCS_REC_LENGTH_MAX	(128u << 20)	/* the spec's */
/* PAGE_DATA: at most this many pfns in one record (libxc sends 1024). */
#define XCS_BATCH_MAX		65536u
/* An HVM_CONTEXT, a CPUID or MSR policy: at most this many bytes. */
#define XCS_BLOB_MAX		(16u << 20)

/* Record types (the spec's numbers). */
enum {
	XCS_REC_END			= 0x00,
	XCS_REC_PAGE_DATA		= 0x01,
	XCS_REC_X86_PV_INFO		= 0x02,
	XCS_REC_X86_PV_P2M_FRAMES	= 0x03,
	XCS_REC_X86_PV_VCPU_BASIC	= 0x04,
	XCS_REC_X86_PV_VCPU_EXTENDED	= 0x05,
	XCS_REC_X86_PV_VCPU_XSAVE	= 0x06,
	XCS_REC_SHARED_INFO		= 0x07,
	XCS_REC_X86_TSC_INFO		= 0x08,
	XCS_REC_HVM_CONTEXT		= 0x09,
	XCS_REC_HVM_PARAMS		= 0x0a,
	XCS_REC_TOOLSTACK		= 0x0b,
	XCS_REC_X86_PV_VCPU_MSRS	= 0x0c,
	XCS_REC_VERIFY			= 0x0d,
	XCS_REC_CHECKPOINT		= 0x0e,
	XCS_REC_CHECKPOINT_DIRTY_PFN_LIST = 0x0f,
	XCS_REC_STATIC_DATA_END		= 0x10,
	XCS_REC_X86_CPUID_POLICY	= 0x11,
	XCS_REC_X86_MSR_POLICY		= 0x12,
};
#define XCS_REC_OPTIONAL	0x80000000u

/* A PAGE_DATA pfn's type (bits 60-63 of its entry, as XEN_DOMCTL_PFINFO). */
#define XCS_PFN_MASK		0x000fffffffffffffull
#define XCS_TYPE_SHIFT		32
#define XCS_TYPE_NOTAB		0x00000000u
#define XCS_TYPE_LPINTAB	0x80000000u
#define XCS_TYPE_BROKEN		0xd0000000u	/* no data, not populated */
#define XCS_TYPE_XALLOC		0xe0000000u	/* populated, no data */
#define XCS_TYPE_XTAB		0xf0000000u	/* no data, not populated */

/* pages: the iovecs' memory stays; the data may be read later. */
#define XCS_PAGES_LATER		1
/* pages: finish every read handed out, then ask again. */
#define XCS_PAGES_DRAIN		2

struct xcs_tsc {
	uint32_t mode;
	uint32_t khz;
	uint64_t nsec;
	uint32_t incarnation;
};

/*
 * What the records ask, in stream order; each returns 0 or a negative
 * errno with why (the reader adds the record's index, type and offset).
 * pages: a PAGE_DATA record's count pfns (masked, each below the limit)
 * and types; *iov and *iovcnt are set to where its nr_data pages go
 * (nr_data * 4096 bytes in all, in the order of the pfns that have
 * data: not XTAB, XALLOC or BROKEN; the callback's array, which the
 * reader may change), or left NULL and 0: read and dropped.
 * pages returns 0, or XCS_PAGES_LATER when the memory the iovecs point
 * to stays until the reader returns: then, from a regular file, the
 * pages may be read on a reader thread, done before any later record
 * other than PAGE_DATA is handled and before the reader returns.
 * pages returns XCS_PAGES_DRAIN, before it changed anything it could
 * not do again, when memory an earlier record's pages may still be read
 * into is to go (a window to be unmapped): the reader finishes every
 * read and asks again for the same record (once: a second DRAIN fails
 * the stream).
 * pages_done: the data was read (rc 0) or not (rc < 0), or, for a
 * record read later, handed to a reader: a batch's mapping can go. static_data: at
 * STATIC_DATA_END (or, in a v2 stream without one, before the first
 * PAGE_DATA), the CPUID and MSR policies seen (NULL, 0: none).
 * hvm_params: count index and value pairs (index[i], value[i]).
 * end: at END, with the last HVM_CONTEXT (there is one: the reader
 * refuses an END without).  Any may be NULL: nothing to do.
 */
struct xcs_ops {
	int	(*pages)(void *u, uint32_t count, const uint64_t *pfns,
		    const uint32_t *types, uint32_t nr_data, struct iovec **iov,
		    int *iovcnt, char *why, size_t len);
	void	(*pages_done)(void *u, uint32_t nr_data, int rc);
	int	(*static_data)(void *u, const void *cpuid, uint32_t cpuid_len,
		    const void *msr, uint32_t msr_len, char *why, size_t len);
	int	(*tsc)(void *u, const struct xcs_tsc *tsc, char *why,
		    size_t len);
	int	(*hvm_params)(void *u, uint32_t count, const uint64_t *index,
		    const uint64_t *value, char *why, size_t len);
	int	(*end)(void *u, const void *hvm_context, uint32_t context_len,
		    char *why, size_t len);
};

struct xcs_stats {
	uint32_t version;		/* the image header's: 2 or 3 */
	uint32_t xen_major, xen_minor;	/* the domain header's */
	uint64_t bytes;			/* read */
	uint32_t records;
	uint64_t page_records;
	uint64_t pages;			/* with data */
	uint64_t pfns;			/* all PAGE_DATA entries */
	uint64_t pages_later;		/* of pages: read on reader threads */
	uint32_t readers;		/* threads (0: all read in order) */
	uint64_t wait_ns;		/* the caller's thread waited for them */
};

/*
 * Read the stream from fd (a pipe or a regular file, from its offset to
 * the END record's end and no further) for an x86 HVM guest whose pfns
 * are all below pfn_limit.  0 once END was handled, or a negative errno
 * (-EINVAL: malformed or unsupported; -EIO: truncated; a callback's)
 * with why: "record N (TYPE) at offset O: ...".  stats (or NULL) says
 * what was read, whatever the result.
 */
int vmb__xcs_read(int fd, uint64_t pfn_limit, const struct xcs_ops *ops,
    void *u, struct xcs_stats *stats, char *why, size_t len);

/*
 * The reader threads a restore from a file uses: VMBUILD_RESTORE_READERS
 * (0 to 16; 0: none, every page read in order on the caller's thread)
 * from the environment, else one per online CPU but one, at most 4.
 * -EINVAL: the variable is set to something else.
 */
#define XCS_READERS_ENV		"VMBUILD_RESTORE_READERS"
int vmb__xcs_readers(void);
/* A record type's name ("PAGE_DATA"; "unknown" for others). */
const char *vmb__xcs_rec_name(uint32_t type);

#endif
