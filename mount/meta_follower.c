/*
 * The metadata event follower (meta_follower.h).
 *
 * DESIGN: the stream itself (connection, resume, back-off, line decoding) is
 * client/meta_stream.h's; its callbacks run on the stream's thread. An event
 * names up to two paths (old and new entry); for each, the parent is
 * resolved through the inode table (a name whose parent the kernel does not
 * know cannot be cached by it). The stream is opened with the mount's
 * signature, so the changes the mount made itself do not come back (the
 * filer leaves them out); an entry whose ctime is not newer than the one the
 * mount already cached (it read the change back meanwhile) is kept. Kernel
 * notifications are sent with no table lock held (the kernel may call back
 * into the file system).
 */
#include "config.h"
#include "meta_follower.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "client/filer_meta.h"
#include "client/meta_stream.h"
#include "log.h"
#include "util.h"

struct meta_follower {
	struct mount_ctx *m;
	meta_stream *stream;
};

/*
 * Events leave inline content out (docs/filer-events.md). For an inode with
 * open file data the current entry is looked up, content included, so the
 * data can be reset from it; NULL when nothing is open, or on failure (the
 * inode is then only invalidated, like a hard link's stub).
 */
static struct filer_entry *content_for_reset(struct meta_follower *f, struct inode *n,
					     const char *path, const struct filer_entry *e)
{
	struct filer_entry *got = NULL;
	bool open;

	pthread_mutex_lock(&n->mu);
	open = n->fd && !file_data_dirty(n->fd);
	pthread_mutex_unlock(&n->mu);
	if (!open || filer_meta_lookup(f->m->rpc, path, &got))
		return NULL;
	if (got->attr.ctime_ns < e->attr.ctime_ns || got->content_omitted) {
		filer_entry_free(got);
		return NULL;
	}
	return got;
}

/* Drops what the mount and the kernel cache for the name at path; e is the new entry or NULL. */
static void invalidate_path(struct meta_follower *f, const char *path, const struct filer_entry *e,
			    bool name_changed)
{
	struct mount_ctx *m = f->m;
	char *dir = NULL, *name = NULL;
	struct inode *n = NULL, *pn = NULL;
	uint64_t pino;

	if (!strcmp(path, m->root)) {
		n = itable_get(m->it, ITABLE_ROOT);
		itable_uncache(n);
		itable_put(m->it, n);
		fuse_lowlevel_notify_inval_inode(m->se, ITABLE_ROOT, -1, 0);
		return;
	}
	if (filer_path_split(path, &dir, &name))
		return;
	pino = itable_resolve(m->it, dir);
	if (!pino || (pino == ITABLE_ROOT && !strcmp(name, MOUNT_TRASH_NAME)))
		goto out;
	n = itable_get_name(m->it, pino, name);
	if (n && e) {
		bool current = false, reset = false;
		struct filer_entry *full = e->content_omitted && !name_changed
						   ? content_for_reset(f, n, path, e)
						   : NULL;
		const struct filer_entry *base = full ? full : e;
		bool stub = (e->attr.hard_link_id_len && !e->n_chunks && !e->has_content &&
			     e->attr.size) ||
			    (e->content_omitted && !full);
		pthread_mutex_lock(&n->mu);
		if (n->cached && n->attr.ctime_ns >= e->attr.ctime_ns && n->cached_until)
			current = true; /* the mount has read this change back already */
		/* a rename moves a name, not data (and may carry a hard link's stub) */
		if (n->fd && !name_changed && !stub && base->attr.ctime_ns > n->base_ctime_ns &&
		    !file_data_dirty(n->fd)) {
			file_data_reset(n->fd, base);
			n->base_ctime_ns = base->attr.ctime_ns;
			reset = true;
		}
		if (!current)
			n->cached_until = 0;
		pthread_mutex_unlock(&n->mu);
		filer_entry_free(full);
		if (!current || reset)
			fuse_lowlevel_notify_inval_inode(m->se, n->ino, 0, 0);
	} else if (n) {
		itable_uncache(n);
		fuse_lowlevel_notify_inval_inode(m->se, n->ino, -1, 0);
	}
	if (!n || !e || name_changed) {
		fuse_lowlevel_notify_inval_entry(m->se, pino, name, strlen(name));
		pn = itable_get(m->it, pino);
		if (pn)
			itable_uncache(pn);
		itable_put(m->it, pn);
		fuse_lowlevel_notify_inval_inode(m->se, pino, -1, 0);
	}
out:
	itable_put(m->it, n);
	free(dir);
	free(name);
}

/* The stream (re)opened: what was cached while no event could arrive is suspect. */
static void on_connected(void *arg)
{
	struct meta_follower *f = arg;
	itable_uncache_all(f->m->it);
	if (!atomic_exchange(&f->m->following, true))
		log_info("following the filer's events: cached entries stay valid until changed");
}

/* A heartbeat: a quiet moment to give forgotten inodes' memory back. */
static void on_heartbeat(void *arg)
{
	struct meta_follower *f = arg;
	itable_trim(f->m->it);
}

static void on_event(void *arg, const struct filer_entry *oe, const struct filer_entry *ne)
{
	struct meta_follower *f = arg;
	if (oe && ne) {
		char *op = filer_entry_full_path(oe), *np = filer_entry_full_path(ne);
		if (strcmp(op, np)) {
			invalidate_path(f, op, NULL, true);
			invalidate_path(f, np, ne, true);
		} else {
			invalidate_path(f, np, ne, false);
		}
		free(op);
		free(np);
	} else {
		char *p = filer_entry_full_path(oe ? oe : ne);
		invalidate_path(f, p, ne, true);
		free(p);
	}
}

static void on_disconnected(void *arg)
{
	struct meta_follower *f = arg;
	/* logged once per loss: tests and operators wait for it, retries are quiet */
	if (atomic_exchange(&f->m->following, false))
		log_info("lost the filer's event stream: cached entries expire after "
			 "-attrTimeout again until it is back");
}

static const struct meta_stream_ops follower_ops = {
	.connected = on_connected,
	.heartbeat = on_heartbeat,
	.event = on_event,
	.disconnected = on_disconnected,
};

meta_follower *meta_follower_start(struct mount_ctx *m, const char *filer_addr)
{
	struct meta_follower *f = xcalloc(1, sizeof(*f));
	/* signature: the events of this mount's own changes are left out */
	struct meta_stream_opts o = {
		.filer = filer_addr,
		.path_prefix = m->root,
		.signature = m->signature,
		.thread_name = "wfs-follower",
	};

	f->m = m;
	f->stream = meta_stream_start(&o, &follower_ops, f);
	return f;
}

void meta_follower_stop(meta_follower *f)
{
	if (!f)
		return;
	meta_stream_stop(f->stream);
	free(f);
}
