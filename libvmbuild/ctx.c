/*
 * ctx.c - a library context: which backend, its capabilities, the debug
 * log hook, the cache of unpacked kernels.
 *
 * A context is shared by the daemon's threads: the backend is opened once
 * and its ops are themselves thread-safe (backend.h); the only mutable
 * state here is the log hook, under log_lock, and the cache of unpacked
 * kernels, under its own lock (imgcache.c).
 *
 * What differs between the threads that use a context is which build
 * they work for: each has the cancel descriptor of its build, which the
 * backend's calls watch (vmb__cancel_fd).  It is per thread, not in
 * struct vmb_ctx, because builds share a context and the backend's ops
 * are not told which build calls them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmb_internal.h"
#include "xen/xen_xcstream.h"

static _Thread_local int tls_cancel_fd = -1;

int
vmb__cancel_fd(void)
{
	return tls_cancel_fd;
}

void
vmb__set_cancel_fd(int fd)
{
	tls_cancel_fd = fd;
}

/* The backend table: sim/ and xen/ each provide one ops table. */
static const struct vmb_backend_ops *const backends[] = {
	&vmb_backend_sim,
	&vmb_backend_xen,
};

static const struct vmb_backend_ops *
backend_by_name(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strlen(backends[i]->name) == len &&
		    !strncmp(backends[i]->name, name, len))
			return backends[i];
	return NULL;
}

/* Is this a Xen dom0 (or a domain with privcmd)? */
static bool
xen_present(void)
{
	static const char *const paths[] = { "/dev/xen/privcmd",
	    "/proc/xen/privcmd" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i], O_RDWR | O_CLOEXEC);

		if (fd >= 0) {
			close(fd);
			return true;
		}
	}
	return false;
}

int
vmb_ctx_open(const char *hypervisor, struct vmb_ctx **ret_ctx)
{
	const struct vmb_backend_ops *ops;
	const char *colon, *arg = NULL;
	struct vmb_ctx *ctx;
	size_t len;
	int rc;

	if (!hypervisor || !ret_ctx)
		return -EINVAL;
	if (!strcmp(hypervisor, "auto")) {
		if (!xen_present())
			return -ENODEV;
		hypervisor = "xen";
	}
	colon = strchr(hypervisor, ':');
	len = colon ? (size_t)(colon - hypervisor) : strlen(hypervisor);
	if (colon)
		arg = colon + 1;
	ops = backend_by_name(hypervisor, len);
	if (!ops) {
		/* "xen" names a real backend that this build lacks. */
		return len == 3 && !strncmp(hypervisor, "xen", 3) ? -ENODEV :
		    -EINVAL;
	}
	if (!strcmp(ops->name, "sim") && (!arg || !*arg))
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->log_lock, NULL);
	ctx->ops = ops;
	rc = vmb__tpool_new(&ctx->pool);
	if (rc == 0)
		rc = vmb__imgcache_new(VMB_IMAGE_CACHE_DEFAULT, &ctx->imgcache);
	if (rc == 0)
		rc = ops->open(arg, &ctx->priv);
	if (rc) {
		vmb__imgcache_free(ctx->imgcache);
		vmb__tpool_free(ctx->pool);
		pthread_mutex_destroy(&ctx->log_lock);
		free(ctx);
		return rc;
	}
	ctx->caps = ops->caps ? ops->caps(ctx->priv) : 0;
	ctx->hotplug_ms = VMB_DEV_HOTPLUG_MS;
	if (ops->device_add)
		ctx->caps |= VMB_CAP_DEVICES;
	/*
	 * Not VMB_CAP_HOST_TOPOLOGY for Xen: its CPUs are physical CPUs,
	 * but this process runs on dom0's vCPUs, whose numbers (and sysfs
	 * nodes) say nothing about where they run.  Node-local populate
	 * threads on Xen would need dom0 vCPUs pinned to each node's pCPUs
	 * first, which is the host's policy, not ours.
	 */
	*ret_ctx = ctx;
	return 0;
}

void
vmb_ctx_free(struct vmb_ctx *ctx)
{
	if (!ctx)
		return;
	vmb__tpool_free(ctx->pool);
	if (ctx->ops && ctx->ops->close)
		ctx->ops->close(ctx->priv);
	/* Images still using an entry keep it (imgcache.c). */
	vmb__imgcache_free(ctx->imgcache);
	pthread_mutex_destroy(&ctx->log_lock);
	free(ctx);
}

const char *
vmb_ctx_backend(const struct vmb_ctx *ctx)
{
	return ctx ? ctx->ops->name : "";
}

uint32_t
vmb_ctx_caps(const struct vmb_ctx *ctx)
{
	return ctx ? ctx->caps : 0;
}

const char *
vmb_ctx_hypervisor(const struct vmb_ctx *ctx)
{
	if (!ctx || !ctx->ops->describe)
		return "unknown";
	return ctx->ops->describe(ctx->priv);
}

void
vmb_ctx_set_log(struct vmb_ctx *ctx, vmb_log_fn *fn, void *user)
{
	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->log_lock);
	ctx->log_fn = fn;
	ctx->log_user = user;
	pthread_mutex_unlock(&ctx->log_lock);
}

void
vmb_ctx_set_hotplug_timeout(struct vmb_ctx *ctx, unsigned ms)
{
	if (ctx && ms >= 4)
		ctx->hotplug_ms = ms;
}

void
vmb_ctx_set_builtin_hotplug(struct vmb_ctx *ctx, bool on)
{
	if (ctx)
		ctx->hotplug_scripts = !on;
}

int
vmb_ctx_set_native_restore(struct vmb_ctx *ctx, enum vmb_native_restore how)
{
	if (!ctx)
		return -EINVAL;
	if (how == VMB_NATIVE_RESTORE_ENGINE && !ctx->ops->restore_engine)
		return -EOPNOTSUPP;
	ctx->restore_engine = how == VMB_NATIVE_RESTORE_ENGINE;
	return 0;
}

int
vmb_restore_readers(void)
{
	return vmb__xcs_readers();
}

void
vmb_ctx_set_image_cache(struct vmb_ctx *ctx, uint64_t bytes)
{
	if (ctx)
		vmb__imgcache_set_max(ctx->imgcache, bytes);
}

int
vmb_image_cache_stats(struct vmb_ctx *ctx,
    struct vmb_image_cache_stats *ret_stats)
{
	if (!ctx || !ret_stats)
		return -EINVAL;
	vmb__imgcache_stats(ctx->imgcache, ret_stats);
	return 0;
}

void
vmb_ctx_set_timeout(struct vmb_ctx *ctx, unsigned ms)
{
	if (ctx && ctx->ops->set_timeout)
		ctx->ops->set_timeout(ctx->priv, ms);
}

void
vmb__log(struct vmb_ctx *ctx, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (!ctx)
		return;
	pthread_mutex_lock(&ctx->log_lock);
	if (ctx->log_fn) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		ctx->log_fn(ctx->log_user, msg);
	}
	pthread_mutex_unlock(&ctx->log_lock);
}
