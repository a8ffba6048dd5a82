/*
 * save.h - vm.save and vm.restore: a guest written to a save stream
 * (vmbuild-stream(5)) and built again from one.
 *
 * The stream goes to and comes from a descriptor the client passes
 * (params.fds.file, SCM_RIGHTS): the daemon opens no file a client
 * names, so a client saves only where it may write and restores only
 * what it may read.
 */
#ifndef VMBUILDD_SAVE_H
#define VMBUILDD_SAVE_H

#include <stdbool.h>

#include <yajl/yajl_gen.h>

#include <stddef.h>
#include <stdint.h>

struct call;
struct vm;
struct vmb_stream_out;

/* Shared by a save and a migration's sender (migrate.c). */
char *stream_guest_text(const struct vm *vm, bool paused);
int stream_vm_check(struct call *call, struct vm *vm, const char *verb);

/*
 * Pages [gfn, gfn + n) of a domain into a stream (`buf`: room for n
 * pages), holes skipped; 0, or a negative errno (a read's named in
 * `why`, a write's not).
 */
int stream_put_pages(struct vmb_stream_out *o, uint32_t domid, uint8_t *buf,
    uint64_t gfn, uint32_t n, char *why, size_t why_len);

int m_vm_save(struct call *call, yajl_gen g);
/*
 * params.fds.<key>: a descriptor the request carried (a regular file, a
 * pipe or a socket) open for writing or reading; -1 after call_error().
 */
int stream_fd(struct call *call, const char *key, bool writing,
    bool *ret_regular);
int m_vm_restore(struct call *call, yajl_gen g);

#endif /* VMBUILDD_SAVE_H */
