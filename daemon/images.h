/*
 * images.h - where a build's kernel and ramdisk come from.
 *
 * The daemon opens nothing a client names with root's rights.  A client
 * passes its images as descriptors (SCM_RIGHTS with the request, named
 * by params.fds; vmctl does), or names files under an image directory
 * the operator configured (--image-dir, repeatable).  Any other path is
 * refused without being looked at, so that no answer tells whether a
 * file exists.  Either way only regular files are read, opened without
 * blocking and not through a final symbolic link.
 */
#ifndef VMBUILDD_IMAGES_H
#define VMBUILDD_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "rpc.h"
#include "source.h"
#include "vmbuild.h"

/* What one build reads its kernel (0) and ramdisk (1) from. */
struct image_req {
	int	fd[2];		/* passed or opened; -1: none */
	int	dir[2];		/* image directory of a path to open; -1 */
	char	*rel[2];	/* the path below that directory */
	/* The file a client other than root was found to be able to read */
	dev_t	dev[2];
	ino_t	ino[2];
	/*
	 * A restart of a VM no root client created: whose rights its
	 * paths are opened with (its creator's, source.h); NULL: root's.
	 */
	const struct peer_cred *as;
};

/* At start: an absolute directory; -1 after saying why on stderr. */
int images_add_dir(const char *path);
void images_free(void);
unsigned images_ndirs(void);

void image_req_init(struct image_req *req);
void image_req_done(struct image_req *req);
/*
 * On the loop: take the descriptors params.fds names and check the
 * guest's paths against the image directories.  A client other than
 * root gets a file of an image directory only when it could open it
 * itself (peer_may_use, peer.c: the mode bits of the file and of every
 * directory on the way), and images_open then opens that same file.
 * 0, or -1 after call_error(): -32602 for a bad params.fds, E_IMAGE_FD
 * (data.files) for paths the daemon will not open, E_IMAGE (EACCES) for
 * one in an image directory the client may not read.
 */
int images_prepare(struct call *call, const struct vmb_guest *g,
    struct image_req *req);
/* Whether `path` lies under an image directory (it could be opened). */
bool images_in_dir(const char *path);
/*
 * For a restart (no request): the descriptors the VM was created with
 * (`kept`, duplicated; -1: none), else the guest's paths under the
 * image directories, which images_open() then opens with the rights of
 * the VM's creator (`owner`, borrowed until then) unless root created
 * it, and only if they are the files found readable at vm.create (its
 * pins).  0, or a negative errno with the reason in `why` (-EPERM: a
 * path the daemon will not open, as a request would have been told
 * with E_IMAGE_FD).
 */
int images_restart(const struct vmb_guest *g, const int kept[2],
    const struct source_owner *owner, struct image_req *req, char *why,
    size_t why_len);
/*
 * Off the loop: open the paths that lie in image directories (with
 * req->as's rights when set: the calling thread takes them for the
 * while, peer.h).  0, or a negative errno with the reason in `why`
 * (naming the file, and the uid it was opened for).
 */
int images_open(struct image_req *req, const struct vmb_guest *g, char *why,
    size_t why_len);

#endif /* VMBUILDD_IMAGES_H */
