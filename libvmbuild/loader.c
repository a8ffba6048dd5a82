/*
 * loader.c - putting a PVH kernel, its ramdisk and command line into
 * guest memory, with the start info a PVH guest finds in %ebx.
 *
 * The kernel is an ELF (64- or 32-bit) that carries Xen's PHYS32_ENTRY
 * note: the 32-bit physical address where a PVH guest starts in protected
 * mode, paging off.  Its PT_LOAD segments are copied at their physical
 * addresses.  After the kernel, page aligned, come: one page with the
 * start info, the module list and the memory map; the command line; the
 * ramdisk.  Everything must fit in RAM below the MMIO hole (layout.c).
 * A bzImage (what distributions ship as vmlinuz) is unpacked to the ELF
 * it carries first (bzimage.c), as libxenguest does, once per file: the
 * context keeps what was unpacked (imgcache.c).
 *
 * Files are untrusted: every offset and size is checked against the file
 * before it is used, and segments may not overlap.  The same code serves
 * every backend; it only needs the backend's map op, or its write op
 * where guest memory cannot be mapped into this process (hvsim).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vmb_internal.h"

#define KERNEL_MAX_BYTES	(256ull << 20)
#define RAMDISK_MAX_BYTES	(1ull << 30)
#define SEGMENT_MAX_BYTES	(1ull << 30)
#define LOAD_LIMIT		(1ull << 32)	/* PVH starts in 32-bit mode */
#define MAP_CHUNK_PAGES		4096		/* 16 MiB mapped at a time */

/*
 * The start info of a PVH guest, version 1, as Xen's public interface
 * (arch-x86/hvm/start_info.h) documents its layout: little-endian, 64-bit
 * addresses, 0 meaning "not present".
 */
struct pvh_start_info {
	uint32_t magic;			/* VMB_HVM_START_MAGIC */
	uint32_t version;		/* 1: memmap fields valid */
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;		/* version 1 */
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct pvh_module {
	uint64_t paddr;
	uint64_t size;
	uint64_t cmdline_paddr;
	uint64_t reserved;
};

struct pvh_memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;			/* 1: RAM, as E820 */
	uint32_t reserved;
};

_Static_assert(sizeof(struct pvh_start_info) == 56, "start info layout");
_Static_assert(sizeof(struct pvh_module) == 32, "module layout");
_Static_assert(sizeof(struct pvh_memmap_entry) == 24, "memmap layout");

#define INFO_OFF_MODLIST	64
#define INFO_OFF_MODNAME	96	/* after the one module's entry */
#define INFO_OFF_MEMMAP		128

struct vmb__image {
	const uint8_t *kernel;		/* kernel_buf, or kernel_ent's data */
	size_t	kernel_len;
	uint8_t	*kernel_buf;		/* this image's own; NULL: shared */
	struct vmb__imgent *kernel_ent;	/* shared with the cache; read-only */
	bool	kernel_cached;		/* kernel_ent was found there */
	struct vmb__elf elf;
	uint8_t	*ramdisk;
	size_t	ramdisk_len;
	char	*cmdline;
	/* The module's name (its command line): hvmloader's "firmware". */
	const char *module_name;
};

/* ------------------------------------------------------------------ */
/* ELF parsing.                                                        */

/* a + b <= limit, without overflow. */
static bool
fits(uint64_t a, uint64_t b, uint64_t limit)
{
	return a <= limit && b <= limit - a;
}

/* Look for the PHYS32_ENTRY note in [off, off+size) of the image. */
static int
scan_notes(const uint8_t *img, size_t len, uint64_t off, uint64_t size,
    bool *found, uint64_t *entry)
{
	uint64_t p = off, end;

	if (!fits(off, size, len))
		return -EINVAL;
	end = off + size;
	while (p < end) {
		uint32_t namesz, descsz, type;
		uint64_t name, desc, next;

		if (!fits(p, 12, end))
			return -EINVAL;
		memcpy(&namesz, img + p, 4);
		memcpy(&descsz, img + p + 4, 4);
		memcpy(&type, img + p + 8, 4);
		name = p + 12;
		desc = name + (((uint64_t)namesz + 3) & ~3ull);
		next = desc + (((uint64_t)descsz + 3) & ~3ull);
		if (!fits(name, namesz, end) || !fits(desc, descsz, end) ||
		    next > end + 3)
			return -EINVAL;
		if (namesz == 4 && !memcmp(img + name, "Xen", 4) &&
		    type == VMB_XEN_ELFNOTE_PHYS32_ENTRY) {
			uint32_t e32;
			uint64_t e64;

			if (descsz == 4) {
				memcpy(&e32, img + desc, 4);
				*entry = e32;
			} else if (descsz == 8) {
				memcpy(&e64, img + desc, 8);
				*entry = e64;
			} else {
				return -EINVAL;
			}
			*found = true;
		}
		p = next;
	}
	return 0;
}

/* Program and section headers, normalised to the 64-bit form. */
struct hdrs {
	uint16_t type, machine;
	uint64_t phoff, shoff;
	uint16_t phentsize, phnum, shentsize, shnum;
};

static void
get_phdr(const uint8_t *img, bool is64, uint64_t off, Elf64_Phdr *ph)
{
	if (is64) {
		memcpy(ph, img + off, sizeof(*ph));
	} else {
		Elf32_Phdr p;

		memcpy(&p, img + off, sizeof(p));
		*ph = (Elf64_Phdr){ .p_type = p.p_type, .p_offset = p.p_offset,
		    .p_vaddr = p.p_vaddr, .p_paddr = p.p_paddr,
		    .p_filesz = p.p_filesz, .p_memsz = p.p_memsz,
		    .p_flags = p.p_flags, .p_align = p.p_align };
	}
}

static void
get_shdr(const uint8_t *img, bool is64, uint64_t off, Elf64_Shdr *sh)
{
	if (is64) {
		memcpy(sh, img + off, sizeof(*sh));
	} else {
		Elf32_Shdr s;

		memcpy(&s, img + off, sizeof(s));
		*sh = (Elf64_Shdr){ .sh_type = s.sh_type,
		    .sh_offset = s.sh_offset, .sh_size = s.sh_size };
	}
}

int
vmb__elf_parse(const void *image, size_t len, struct vmb__elf *ret_elf)
{
	return vmb__elf_parse_as(image, len, false, ret_elf);
}

int
vmb__elf_parse_as(const void *image, size_t len, bool ehdr_entry,
    struct vmb__elf *ret_elf)
{
	const uint8_t *img = image;
	struct vmb__elf elf;
	struct hdrs h;
	bool found = false;
	uint64_t entry = 0, e_entry;
	size_t phsz, shsz;
	int rc;

	if (!img || !ret_elf)
		return -EINVAL;
	if (len < EI_NIDENT || memcmp(img, ELFMAG, SELFMAG) != 0)
		return -ENOEXEC;
	if (img[EI_DATA] != ELFDATA2LSB || img[EI_VERSION] != EV_CURRENT)
		return -ENOEXEC;
	memset(&elf, 0, sizeof(elf));
	if (img[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;

		if (len < sizeof(eh))
			return -ENOEXEC;
		memcpy(&eh, img, sizeof(eh));
		h = (struct hdrs){ eh.e_type, eh.e_machine, eh.e_phoff,
		    eh.e_shoff, eh.e_phentsize, eh.e_phnum, eh.e_shentsize,
		    eh.e_shnum };
		e_entry = eh.e_entry;
		elf.is64 = true;
		phsz = sizeof(Elf64_Phdr);
		shsz = sizeof(Elf64_Shdr);
	} else if (img[EI_CLASS] == ELFCLASS32) {
		Elf32_Ehdr eh;

		if (len < sizeof(eh))
			return -ENOEXEC;
		memcpy(&eh, img, sizeof(eh));
		h = (struct hdrs){ eh.e_type, eh.e_machine, eh.e_phoff,
		    eh.e_shoff, eh.e_phentsize, eh.e_phnum, eh.e_shentsize,
		    eh.e_shnum };
		e_entry = eh.e_entry;
		phsz = sizeof(Elf32_Phdr);
		shsz = sizeof(Elf32_Shdr);
	} else {
		return -ENOEXEC;
	}
	if (h.type != ET_EXEC || (h.machine != EM_X86_64 && h.machine != EM_386))
		return -ENOEXEC;
	if (h.phnum == 0 || h.phentsize != phsz ||
	    !fits(h.phoff, (uint64_t)h.phnum * phsz, len))
		return -EINVAL;
	elf.low = UINT64_MAX;
	for (uint16_t i = 0; i < h.phnum; i++) {
		Elf64_Phdr ph;

		get_phdr(img, elf.is64, h.phoff + (uint64_t)i * phsz, &ph);
		if (ph.p_type == PT_NOTE) {
			rc = scan_notes(img, len, ph.p_offset, ph.p_filesz,
			    &found, &entry);
			if (rc)
				return rc;
			continue;
		}
		if (ph.p_type != PT_LOAD || ph.p_memsz == 0)
			continue;
		if (elf.nr_segs == VMB_ELF_MAX_SEGS ||
		    ph.p_filesz > ph.p_memsz || ph.p_memsz > SEGMENT_MAX_BYTES ||
		    !fits(ph.p_offset, ph.p_filesz, len) ||
		    !fits(ph.p_paddr, ph.p_memsz, LOAD_LIMIT))
			return -EINVAL;
		for (uint32_t j = 0; j < elf.nr_segs; j++) {
			const struct vmb__elf_seg *s = &elf.segs[j];

			if (ph.p_paddr < s->paddr + s->memsz &&
			    s->paddr < ph.p_paddr + ph.p_memsz)
				return -EINVAL;	/* overlapping segments */
		}
		elf.segs[elf.nr_segs++] = (struct vmb__elf_seg){
		    .paddr = ph.p_paddr, .offset = ph.p_offset,
		    .filesz = ph.p_filesz, .memsz = ph.p_memsz };
		if (ph.p_paddr < elf.low)
			elf.low = ph.p_paddr;
		if (ph.p_paddr + ph.p_memsz > elf.high)
			elf.high = ph.p_paddr + ph.p_memsz;
	}
	if (elf.nr_segs == 0)
		return -ENOEXEC;
	/* Linkers may put notes in sections only. */
	if (!found && h.shnum && h.shentsize == shsz &&
	    fits(h.shoff, (uint64_t)h.shnum * shsz, len)) {
		for (uint16_t i = 0; i < h.shnum; i++) {
			Elf64_Shdr sh;

			get_shdr(img, elf.is64, h.shoff + (uint64_t)i * shsz,
			    &sh);
			if (sh.sh_type != SHT_NOTE)
				continue;
			rc = scan_notes(img, len, sh.sh_offset, sh.sh_size,
			    &found, &entry);
			if (rc)
				return rc;
		}
	}
	/* hvmloader starts at its ELF entry, as xc_dom's loader takes it. */
	if (!found && ehdr_entry) {
		found = true;
		entry = e_entry;
	}
	if (!found)
		return -ENOEXEC;	/* not a PVH kernel */
	/* The entry must be code we load. */
	rc = -EINVAL;
	for (uint32_t j = 0; j < elf.nr_segs; j++)
		if (entry >= elf.segs[j].paddr &&
		    entry < elf.segs[j].paddr + elf.segs[j].memsz)
			rc = 0;
	if (rc)
		return rc;
	elf.entry = entry;
	*ret_elf = elf;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Files.                                                              */

/*
 * The file behind fd, looked at before anything is read (so that the
 * image cache can be asked first): only a regular file of at most
 * `max` bytes, open for reading, is taken.  Reading would find out the
 * last, but a kernel found in the cache is not read: an O_PATH or
 * write-only descriptor, which fstat takes, must not get one.
 */
static int
file_check(int fd, uint64_t max, struct stat *st)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if ((fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return -EBADF;
	if (fstat(fd, st) != 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if ((uint64_t)st->st_size > max)
		return -EFBIG;
	return 0;
}

/*
 * Read the whole file `st` describes from fd, without moving the
 * descriptor's offset (it may be a client's, shared).
 */
static int
read_fd(int fd, const struct stat *st, uint8_t **ret, size_t *ret_len)
{
	uint8_t *buf = NULL;
	size_t got = 0;
	int rc;

	buf = malloc((size_t)st->st_size ? (size_t)st->st_size : 1);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st->st_size) {
		ssize_t r = pread(fd, buf + got, (size_t)st->st_size - got,
		    (off_t)got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			/* 0: the file shrank while we read it. */
			rc = r < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)r;
	}
	*ret = buf;
	*ret_len = got;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}

/*
 * Open a path the way every image is opened: never blocking (a FIFO
 * would hang the build), never through a final symbolic link, never a
 * controlling terminal; file_check() then takes regular files only.
 * The descriptor, or a negative errno.
 */
static int
open_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW |
	    O_NOCTTY);

	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	return fd;
}

/*
 * Read an image from fd when it is >= 0 (the caller's), else from
 * `path`, opened here.
 */
static int
read_image(int fd, const char *path, uint64_t max, uint8_t **ret,
    size_t *ret_len)
{
	int use = fd >= 0 ? fd : open_path(path), rc;
	struct stat st;

	rc = use < 0 ? use : file_check(use, max, &st);
	if (rc == 0)
		rc = read_fd(use, &st, ret, ret_len);
	if (fd < 0 && use >= 0)
		close(use);
	return rc;
}

static int
read_path(const char *path, uint64_t max, uint8_t **ret, size_t *ret_len)
{
	return read_image(-1, path, max, ret, ret_len);
}

static uint64_t
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void
vmb__image_free(struct vmb__image *img)
{
	if (!img)
		return;
	free(img->kernel_buf);
	vmb__imgent_unref(img->kernel_ent);
	free(img->ramdisk);
	free(img->cmdline);
	free(img);
}

/* Why a file could not be read, in words. */
static void
why_file(char *why, size_t len, const char *what, const char *path,
    uint64_t max, int rc)
{
	if (!why || !len)
		return;
	if (rc == -EINVAL)
		snprintf(why, len, "%s %s: not a regular file", what, path);
	else if (rc == -EFBIG)
		snprintf(why, len, "%s %s: larger than %llu MiB", what, path,
		    (unsigned long long)(max >> 20));
	else if (rc == -EIO)
		snprintf(why, len, "%s %s: changed while it was read", what,
		    path);
	else if (rc == -EBADF)
		snprintf(why, len, "%s %s: not open for reading", what, path);
	else
		snprintf(why, len, "%s %s: %s", what, path, strerror(-rc));
}

/* Why the kernel is not a PVH ELF, in words. */
static void
why_elf(char *why, size_t why_len, const struct vmb_guest *g,
    const struct vmb__image *img, int rc)
{
	bool elf = img->kernel_len >= SELFMAG &&
	    memcmp(img->kernel, ELFMAG, SELFMAG) == 0;

	vmb__why(why, why_len, "kernel %s: %s", g->kernel, !elf ?
	    "not an ELF file" : rc == -ENOEXEC ? "not a PVH kernel "
	    "(no loadable segment or no Xen PHYS32_ENTRY note)" :
	    "malformed ELF image");
}

/*
 * The kernel, checked, into img: unpacked from the cache when it holds
 * this file's (the file is then not read at all), else read, unpacked
 * when it is a bzImage, and that ELF offered to the cache.  The cache is
 * asked only once the kernel is open, by the identity fstat gives of
 * the very descriptor it would be read from (the caller's, opened with
 * its rights): it never gives a kernel of a file the caller could not
 * open.  The time is taken before the file is looked at, so that a
 * write after it shows in the file's times (imgcache.c: racy files).
 */
static int
kernel_open(struct vmb__imgcache *cache, const struct vmb_guest *g,
    int kernel_fd, struct vmb__image *img, char *why, size_t why_len)
{
	uint64_t read_ns = realtime_ns();
	int fd = kernel_fd >= 0 ? kernel_fd : open_path(g->kernel), rc;
	bool bz = false;
	struct stat st;

	rc = fd < 0 ? fd : file_check(fd, KERNEL_MAX_BYTES, &st);
	if (rc == 0 && (img->kernel_ent = vmb__imgcache_get(cache, &st))) {
		img->kernel = vmb__imgent_data(img->kernel_ent,
		    &img->kernel_len);
		img->kernel_cached = true;
	} else if (rc == 0) {
		rc = read_fd(fd, &st, &img->kernel_buf, &img->kernel_len);
		img->kernel = img->kernel_buf;
	}
	if (rc) {
		why_file(why, why_len, "kernel", g->kernel, KERNEL_MAX_BYTES,
		    rc);
		goto out;
	}
	if (!img->kernel_cached && vmb__is_bzimage(img->kernel,
	    img->kernel_len)) {
		uint8_t *elf = NULL;
		size_t elf_len = 0;
		char bzwhy[192] = "";

		rc = vmb__bzimage_unpack(img->kernel, img->kernel_len, &elf,
		    &elf_len, bzwhy, sizeof(bzwhy));
		if (rc) {
			vmb__why(why, why_len, "kernel %s: %s", g->kernel,
			    bzwhy);
			goto out;
		}
		free(img->kernel_buf);
		img->kernel = img->kernel_buf = elf;
		img->kernel_len = elf_len;
		bz = true;
	}
	rc = vmb__elf_parse(img->kernel, img->kernel_len, &img->elf);
	if (rc) {
		why_elf(why, why_len, g, img, rc);
		goto out;
	}
	/* Only what unpacking cost is worth keeping, and only a PVH ELF. */
	if (bz && (img->kernel_ent = vmb__imgcache_put(cache, &st, read_ns,
	    img->kernel_buf, img->kernel_len)))
		img->kernel_buf = NULL;	/* the entry's now */
out:
	if (kernel_fd < 0 && fd >= 0)
		close(fd);
	return rc;
}

int
vmb__image_open(const struct vmb_guest *g, struct vmb__image **ret)
{
	return vmb__image_open_cache(NULL, g, -1, -1, ret, NULL, 0);
}

int
vmb__image_open_why(const struct vmb_guest *g, int kernel_fd, int ramdisk_fd,
    struct vmb__image **ret, char *why, size_t why_len)
{
	return vmb__image_open_cache(NULL, g, kernel_fd, ramdisk_fd, ret, why,
	    why_len);
}

int
vmb__image_open_cache(struct vmb__imgcache *cache, const struct vmb_guest *g,
    int kernel_fd, int ramdisk_fd, struct vmb__image **ret, char *why,
    size_t why_len)
{
	struct vmb__image *img;
	int rc;

	if (!g || !g->kernel || !ret)
		return -EINVAL;
	img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	rc = kernel_open(cache, g, kernel_fd, img, why, why_len);
	if (rc)
		goto fail;
	if (g->ramdisk) {
		rc = read_image(ramdisk_fd, g->ramdisk, RAMDISK_MAX_BYTES,
		    &img->ramdisk, &img->ramdisk_len);
		if (rc) {
			why_file(why, why_len, "ramdisk", g->ramdisk,
			    RAMDISK_MAX_BYTES, rc);
			goto fail;
		}
	}
	if (g->cmdline && !(img->cmdline = strdup(g->cmdline))) {
		rc = -ENOMEM;
		goto fail;
	}
	*ret = img;
	return 0;
fail:
	vmb__image_free(img);
	return rc;
}

bool
vmb__image_cached(const struct vmb__image *img)
{
	return img && img->kernel_cached;
}

const uint8_t *
vmb__image_kernel(const struct vmb__image *img, size_t *ret_len)
{
	*ret_len = img->kernel_len;
	return img->kernel;
}

/*
 * An HVM guest's images, as libxl hands them to xc_dom: hvmloader (an
 * ELF started at its entry, in 32-bit protected mode) in place of a
 * kernel, and the BIOS (SeaBIOS or OVMF) as the one module, named
 * "firmware", which hvmloader finds in the start info and copies where
 * the BIOS runs.  Missing or unreadable firmware says which file.
 */
int
vmb__firmware_open(const char *hvmloader, const char *bios,
    struct vmb__image **ret, char *why, size_t why_len)
{
	struct vmb__image *img = calloc(1, sizeof(*img));
	int rc;

	if (!img)
		return -ENOMEM;
	rc = read_path(hvmloader, KERNEL_MAX_BYTES, &img->kernel_buf,
	    &img->kernel_len);
	img->kernel = img->kernel_buf;
	if (rc) {
		why_file(why, why_len, "firmware (hvmloader)", hvmloader,
		    KERNEL_MAX_BYTES, rc);
		goto fail;
	}
	rc = vmb__elf_parse_as(img->kernel, img->kernel_len, true, &img->elf);
	if (rc) {
		vmb__why(why, why_len, "firmware (hvmloader) %s: not a "
		    "loadable ELF image", hvmloader);
		goto fail;
	}
	rc = read_path(bios, RAMDISK_MAX_BYTES, &img->ramdisk,
	    &img->ramdisk_len);
	if (rc) {
		why_file(why, why_len, "firmware (bios)", bios,
		    RAMDISK_MAX_BYTES, rc);
		goto fail;
	}
	img->module_name = "firmware";
	*ret = img;
	return 0;
fail:
	vmb__image_free(img);
	return rc;
}

uint64_t
vmb__image_entry(const struct vmb__image *img)
{
	return img ? img->elf.entry : 0;
}

/* ------------------------------------------------------------------ */
/* Writing into guest memory.                                          */

/*
 * Guest memory mapped once for the whole image when it spans at most
 * MAP_CHUNK_PAGES: a map is a hypervisor request plus an mmap and a
 * munmap (a TLB shootdown), which cost more than the copies of a small
 * kernel (three maps took ~1.5 ms of a 2 ms load phase on a
 * virtualised 2-CPU host).
 */
struct window {
	uint8_t	*map;		/* NULL: map each write on its own */
	uint64_t lo, hi;	/* guest-physical [lo, hi), page aligned */
};

/*
 * Copy `len` bytes of `src` (NULL: zeroes) to guest-physical `paddr`: by
 * the backend's write op when it has one, else through the window when
 * it covers the range, else mapping at most MAP_CHUNK_PAGES at a time.
 */
static int
guest_write(const struct vmb_backend_ops *ops, void *priv, uint32_t domid,
    const struct window *w, uint64_t paddr, const void *src, uint64_t len)
{
	if (ops->write)
		return len ? ops->write(priv, domid, paddr, src, len) : 0;
	if (w->map && paddr >= w->lo && len <= w->hi - paddr) {
		if (src)
			memcpy(w->map + (paddr - w->lo), src, len);
		else
			memset(w->map + (paddr - w->lo), 0, len);
		return 0;
	}
	while (len > 0) {
		uint64_t gfn = paddr >> VMB_PAGE_SHIFT;
		uint64_t off = paddr & (VMB_PAGE_SIZE - 1);
		uint64_t span = MAP_CHUNK_PAGES * VMB_PAGE_SIZE - off;
		uint64_t n = len < span ? len : span;
		size_t pages = (size_t)((off + n + VMB_PAGE_SIZE - 1) >>
		    VMB_PAGE_SHIFT);
		void *map = NULL;
		int rc;

		rc = ops->map(priv, domid, gfn, pages, &map);
		if (rc)
			return rc;
		if (src)
			memcpy((uint8_t *)map + off, src, n);
		else
			memset((uint8_t *)map + off, 0, n);
		if (ops->unmap)
			ops->unmap(priv, map, pages);
		paddr += n;
		len -= n;
		if (src)
			src = (const uint8_t *)src + n;
	}
	return 0;
}

static uint64_t
page_up(uint64_t x)
{
	return (x + VMB_PAGE_SIZE - 1) & ~(VMB_PAGE_SIZE - 1);
}

int
vmb__image_load(const struct vmb_backend_ops *ops, void *priv,
    uint32_t domid, const struct vmb__image *img, uint64_t mem_bytes,
    struct vmb_boot *ret_boot)
{
	return vmb__image_load_why(ops, priv, domid, img, mem_bytes, ret_boot,
	    NULL, 0);
}

int
vmb__image_load_why(const struct vmb_backend_ops *ops, void *priv,
    uint32_t domid, const struct vmb__image *img, uint64_t mem_bytes,
    struct vmb_boot *ret_boot, char *why, size_t why_len)
{
	struct vmb_memmap_entry ram = { 0, mem_bytes, VMB_E820_RAM };
	struct vmb__load_env env = { .load_limit = mem_bytes,
	    .ram_bytes = mem_bytes, .memmap = &ram, .nr_memmap = 1 };

	return vmb__image_load_env(ops, priv, domid, img, &env, ret_boot, why,
	    why_len);
}

/* The start info page: header, module list, memory map. */
static int
fill_info_page(uint8_t *page, const struct vmb__image *img,
    const struct vmb__load_env *env, uint64_t info, uint64_t cmdline,
    uint64_t ramdisk)
{
	struct pvh_start_info si;
	struct pvh_module mod;

	if (env->nr_memmap == 0 || env->nr_memmap > VMB_MEMMAP_MAX ||
	    INFO_OFF_MEMMAP + env->nr_memmap * sizeof(struct pvh_memmap_entry)
	    > VMB_PAGE_SIZE)
		return -EINVAL;
	memset(page, 0, VMB_PAGE_SIZE);
	si = (struct pvh_start_info){
		.magic = VMB_HVM_START_MAGIC,
		.version = 1,
		.nr_modules = img->ramdisk ? 1 : 0,
		.modlist_paddr = img->ramdisk ? info + INFO_OFF_MODLIST : 0,
		.cmdline_paddr = cmdline,
		.rsdp_paddr = env->rsdp,
		.memmap_paddr = info + INFO_OFF_MEMMAP,
		.memmap_entries = env->nr_memmap,
	};
	mod = (struct pvh_module){ .paddr = ramdisk,
	    .size = img->ramdisk_len, .cmdline_paddr = img->module_name ?
	    info + INFO_OFF_MODNAME : 0 };
	memcpy(page, &si, sizeof(si));
	if (img->module_name)
		snprintf((char *)page + INFO_OFF_MODNAME, INFO_OFF_MEMMAP -
		    INFO_OFF_MODNAME, "%s", img->module_name);
	if (img->ramdisk)
		memcpy(page + INFO_OFF_MODLIST, &mod, sizeof(mod));
	for (uint32_t i = 0; i < env->nr_memmap; i++) {
		struct pvh_memmap_entry mm = { .addr = env->memmap[i].addr,
		    .size = env->memmap[i].size, .type = env->memmap[i].type };

		memcpy(page + INFO_OFF_MEMMAP + i * sizeof(mm), &mm,
		    sizeof(mm));
	}
	return 0;
}

int
vmb__image_load_env(const struct vmb_backend_ops *ops, void *priv,
    uint32_t domid, const struct vmb__image *img,
    const struct vmb__load_env *env, struct vmb_boot *ret_boot, char *why,
    size_t why_len)
{
	uint8_t info_page[VMB_PAGE_SIZE];
	uint64_t info, cmdline = 0, ramdisk = 0, end, limit;
	struct window w = { 0 };
	size_t cmdlen = img && img->cmdline ? strlen(img->cmdline) + 1 : 0;
	int rc;

	if (!ops || !img || !env || !ret_boot)
		return -EINVAL;
	if (!ops->map && !ops->write)
		return -EOPNOTSUPP;
	limit = env->load_limit < LOAD_LIMIT ? env->load_limit : LOAD_LIMIT;
	info = page_up(img->elf.high);
	end = info + VMB_PAGE_SIZE;
	if (cmdlen) {
		cmdline = end;
		end = page_up(cmdline + cmdlen);
	}
	if (img->ramdisk) {
		ramdisk = end;
		end = page_up(ramdisk + img->ramdisk_len);
	}
	if (img->elf.high > limit || end > limit) {
		if (why && why_len)
			snprintf(why, why_len, "the image needs %llu KiB of "
			    "guest memory (kernel, start info%s%s), the "
			    "guest has %llu KiB", (unsigned long long)
			    (end >> 10), cmdlen ? ", command line" : "",
			    img->ramdisk ? ", ramdisk" : "",
			    (unsigned long long)(limit >> 10));
		return -ENOSPC;
	}
	w.lo = end;
	for (uint32_t i = 0; i < img->elf.nr_segs; i++)
		if (img->elf.segs[i].paddr < w.lo)
			w.lo = img->elf.segs[i].paddr;
	w.lo &= ~(uint64_t)(VMB_PAGE_SIZE - 1);
	w.hi = end;
	if (!ops->write && (w.hi - w.lo) >> VMB_PAGE_SHIFT <= MAP_CHUNK_PAGES) {
		void *map = NULL;

		rc = ops->map(priv, domid, w.lo >> VMB_PAGE_SHIFT,
		    (size_t)((w.hi - w.lo) >> VMB_PAGE_SHIFT), &map);
		if (rc) {
			if (why && why_len)
				snprintf(why, why_len, "cannot map guest "
				    "memory: %s", strerror(-rc));
			return rc;
		}
		w.map = map;
	}

	for (uint32_t i = 0; i < img->elf.nr_segs; i++) {
		const struct vmb__elf_seg *s = &img->elf.segs[i];

		rc = guest_write(ops, priv, domid, &w, s->paddr,
		    img->kernel + s->offset, s->filesz);
		if (!rc && s->memsz > s->filesz)	/* .bss */
			rc = guest_write(ops, priv, domid, &w,
			    s->paddr + s->filesz, NULL, s->memsz - s->filesz);
		if (rc)
			goto out;
	}
	if (cmdlen && (rc = guest_write(ops, priv, domid, &w, cmdline,
	    img->cmdline, cmdlen)))
		goto out;
	if (img->ramdisk && (rc = guest_write(ops, priv, domid, &w, ramdisk,
	    img->ramdisk, img->ramdisk_len)))
		goto out;

	rc = fill_info_page(info_page, img, env, info, cmdline, ramdisk);
	if (!rc)
		rc = guest_write(ops, priv, domid, &w, info, info_page,
		    sizeof(info_page));
	if (rc)
		goto out;
	memset(ret_boot, 0, sizeof(*ret_boot));
	ret_boot->entry = img->elf.entry;
	ret_boot->start_info = info;
	ret_boot->memory_bytes = env->ram_bytes;
	ret_boot->nr_memmap = env->nr_memmap;
	memcpy(ret_boot->memmap, env->memmap,
	    env->nr_memmap * sizeof(*env->memmap));
out:
	if (w.map && ops->unmap)
		ops->unmap(priv, w.map, (size_t)((w.hi - w.lo) >>
		    VMB_PAGE_SHIFT));
	return rc;
}
