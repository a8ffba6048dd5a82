/*
 * state.h - the state directory: one JSON record per domain we build.
 *
 * A record is written (atomically: temporary file, renamed into place or
 * exchanged with the record it replaces, see state.c) with state
 * "building" BEFORE the domain is created, and rewritten as "built" once
 * the build succeeded.  After a crash of the daemon, a "building" record
 * names a domain that may be half built: the daemon destroys it at start
 * (reconcile.c, vm_reconcile).  Both writes stay: without the first, a
 * half-built domain left by a crash is nobody's; without the second
 * before the reply, a VM its client was told about would be destroyed
 * by the next start.
 *
 * Records are not fsynced.  They must survive the daemon, not the host:
 * the kernel has them once the rename returns, and a host that goes down
 * takes its domains with it, so after a reboot every record is of a
 * domain that no longer exists, and reconciliation drops it (a torn file
 * is moved to quarantine/, see below).  libxl stores its domain userdata the same way
 * (libxl__userdata_store: write, rename).  Four fsyncs per create were
 * most of its cost: 16.6 ms against 1.85 ms per create of a 128 MiB VM
 * (bench/smallvms, sequential, phantom memory, loaded 2-CPU VM).
 *
 * Functions may be called from worker threads; each record is written by
 * one thread at a time (the one that owns its domain's operation).
 */
#ifndef VMBUILDD_STATE_H
#define VMBUILDD_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "vmbuild.h"

/* The restart times a record holds, at most. */
#define STATE_RESTARTS_MAX	32

/*
 * A pin of one vCPU of its own (vm.vcpu_pin of a single vCPU): CPU lists
 * as given ("0-1", "nodes:1"); NULL where the VM's cpus= (cpus_soft=)
 * holds for it.  A pin of every vCPU is cpus=/cpus_soft= in the record's
 * configuration instead, and drops these.
 */
struct state_pin {
	uint32_t	vcpu;
	char		*hard;
	char		*soft;
};

/*
 * A record that can never be loaded (not JSON, not a record, an invalid
 * name, not a regular file...) is moved to this folder of the state
 * directory at start, with <file>.why beside it, and logged once;
 * host.info lists what is there.
 */
#define STATE_QUARANTINE	"quarantine"

/*
 * A migration of the VM ("migrating" in the record, migrate.c): written
 * before the stream starts, dropped when it ends, kept while its
 * outcome is unknown.  Without `ending` the end record has not gone, so
 * the receiver cannot keep the guest: it runs here.  With `ending` it
 * may have gone: only the receiver knows, asked with `query` (a /bin/sh
 * command line printing "present UUID" or "absent", run as uid/gid, who
 * asked for the migration), or by an operator.  A daemon killed
 * mid-migration resolves it at its next start (migrate_resolve_pending).
 */
struct state_migration {
	bool		set;
	bool		ending;
	bool		was_paused;	/* before the migration: left so */
	char		target[256];	/* the receiving host, as given */
	char		*query;		/* NULL: none given */
	uint32_t	uid, gid;
};

/*
 * An HVM guest's device model ("device_model"), so that a restarted
 * daemon takes it back (dm.c): its pid, that process's start time
 * (/proc/PID/stat's starttime, in clock ticks since boot: a pid used
 * again by another process has another) and its QMP socket.  pid 0:
 * none (a PVH guest, or a record of an older vmbuildd).
 */
#define STATE_DM_PATH_LEN	108	/* sun_path */
struct state_dm {
	int		pid;
	unsigned long long start_time;
	char		qmp[STATE_DM_PATH_LEN];
	char		serial_tty[VMB_DM_TTY_LEN];	/* or "" */
};

struct state_record {
	uint8_t		uuid[16];
	char		name[VMB_NAME_LEN];
	bool		built;		/* false: "building" */
	uint32_t	domid;		/* VMB_DOMID_INVALID when unknown */
	char		*config_path;	/* may be NULL */
	double		created_at;	/* Unix time */
	char		*config_json;	/* guest summary as JSON text, or NULL */
	char		*build_json;	/* build result as JSON text, or NULL */
	/*
	 * What the guest was built from, as vm.create got it (source.h),
	 * to build it again on a restart; NULL in records of an older
	 * vmbuildd.
	 */
	char		*source_json;
	/*
	 * Its domain is being replaced (on_reboot=restart & co.): set
	 * before the old domain is destroyed, so that a daemon that dies
	 * in between still builds the new one when it starts again.
	 */
	bool		restart;
	/*
	 * When the daemon restarted the VM's domain (on_*="restart"), Unix
	 * times, oldest first: the restarts within lifecycle.c's window, so
	 * that its back-off and limit outlive a daemon restart.
	 */
	double		restart_times[STATE_RESTARTS_MAX];
	unsigned	nrestart_times;
	/*
	 * Pins of single vCPUs ("vcpu_pins"), by vCPU ascending, so that a
	 * restarted daemon reports them and a restarted domain gets them
	 * again; none in records of an older vmbuildd.
	 */
	struct state_pin *pins;
	uint32_t	npins;
	struct state_migration migration;
	struct state_dm	dm;		/* its device model, if any */
};

/* A copy of `src` into *dst (its query duplicated); 0 or -ENOMEM. */
int state_migration_copy(struct state_migration *dst,
    const struct state_migration *src);
void state_migration_done(struct state_migration *m);

/*
 * Locks the state directory (one daemon per directory: <dir>/lock,
 * flock, the holder's pid in it) or fails, saying which pid holds it.
 */
int state_init(const char *dir);
int state_write(const struct state_record *rec);
int state_remove(const uint8_t uuid[16]);
/*
 * Every record; files that can never be records are quarantined, those
 * that cannot be read now (EIO...) are logged and skipped.
 */
int state_load_all(struct state_record **ret_recs, size_t *ret_n);
/* The quarantined records still there: [{"file", "reason"}...] (loop). */
void state_gen_quarantined(yajl_gen g);
void state_record_done(struct state_record *rec);
/* A copy of `n` pins into *ret (NULL for none); 0 or -ENOMEM. */
int state_pins_copy(const struct state_pin *src, uint32_t n,
    struct state_pin **ret);
void state_pins_free(struct state_pin *pins, uint32_t n);
/*
 * vCPU `vcpu` pinned (hard, soft: NULL leaves that one as it was), as
 * vm.vcpu_pin records it; VMB_VCPU_ALL: a pin of every vCPU, which
 * drops the single pins of that kind (cpus= now says it for all).  A
 * pin with neither list left goes.  0 or -ENOMEM (*pins unchanged).
 */
int state_pins_set(struct state_pin **pins, uint32_t *n, uint32_t vcpu,
    const char *hard, const char *soft);
/* vCPU `vcpu`'s own pin, or NULL. */
const struct state_pin *state_pin_find(const struct state_pin *pins,
    uint32_t n, uint32_t vcpu);
/*
 * One record file's text (`name`: the file's name, <uuid>.json, which
 * must match the uuid inside); 0, or -EINVAL with why in `why`.  For
 * state_load_all() and the fuzzer.
 */
int state_parse(const char *name, const char *text, size_t len,
    struct state_record *rec, char *why, size_t whylen);

#endif /* VMBUILDD_STATE_H */
