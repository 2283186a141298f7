/*
 * The data operations of weedfs-mount (fuse_ops_int.h): open, create, read,
 * write, flush, fsync, release, fallocate, lseek and copy_file_range, the
 * commit of a file's data (fuse_data_commit_node) and the background commit
 * thread. See the DESIGN comment in fuse_ops.c.
 */
#include "config.h"
#include "fuse_ops_int.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bigbuf.h"
#include "client/chunks.h"
#include "fuse_locks.h"
#include "log.h"
#include "util.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

/* A signature of the first n of chunks (file ids, ranges, times); never 0. */
static uint64_t chunks_sig(const struct filer_chunk *c, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++) {
		h = fnv(h, c[i].fid, strlen(c[i].fid) + 1);
		h = fnv(h, &c[i].offset, sizeof(c[i].offset));
		h = fnv(h, &c[i].size, sizeof(c[i].size));
		h = fnv(h, &c[i].mtime_ns, sizeof(c[i].mtime_ns));
		h = fnv(h, &c[i].is_manifest, sizeof(c[i].is_manifest));
	}
	return h ? h : 1;
}

/*
 * A signature of the bytes of e's file: size, mtime, chunk list and inline
 * content. Two entries with the same one hold the same data, so the kernel's
 * pages of the one may serve the other (keep_cache). Never 0.
 */
static uint64_t data_sig(const struct filer_entry *e)
{
	uint64_t h = chunks_sig(e->chunks, e->n_chunks);

	h = fnv(h, &e->attr.size, sizeof(e->attr.size));
	h = fnv(h, &e->attr.mtime_ns, sizeof(e->attr.mtime_ns));
	h = fnv(h, &e->has_content, sizeof(e->has_content));
	if (e->has_content && e->content_len)
		h = fnv(h, e->content, e->content_len);
	return h ? h : 1;
}

/* ---- commits ---- */

/*
 * After a commit s of n whose answer is e (n->mu held): whether the kernel's
 * pages, which held the data of n's last signature plus this mount's writes,
 * still are e's data. True when e's chunk list is exactly the list sent (a
 * replace) or the known list followed by the chunks appended; anything else
 * (another client changed the file in between, the filer merged or cut
 * chunks) is unknown and the next open drops the pages.
 */
static bool commit_keeps_pages(struct inode *n, const struct filer_meta_set *s,
			       const struct filer_entry *e)
{
	size_t base;

	if (!n->kc_sig)
		return false;
	if (s->set & FM_SET_CONTENT)
		return !e->n_chunks && e->has_content && e->content_len == s->content_len &&
		       (!s->content_len || !memcmp(e->content, s->content, s->content_len));
	if (s->set & FM_SET_CHUNKS)
		return e->n_chunks == s->n_append &&
		       chunks_sig(e->chunks, e->n_chunks) == chunks_sig(s->append, s->n_append);
	if (!(s->set & (FM_SET_APPEND | FM_SET_SIZE)))
		return n->kc_chunks_sig == chunks_sig(e->chunks, e->n_chunks); /* attributes only */
	if (e->n_chunks < s->n_append)
		return false;
	base = e->n_chunks - s->n_append;
	return chunks_sig(e->chunks, base) == n->kc_chunks_sig &&
	       chunks_sig(e->chunks + base, s->n_append) == chunks_sig(s->append, s->n_append);
}

/*
 * Takes n's attributes a setattr kept for this commit (fuse_attrs_defer) into
 * s where s does not set them (n->mu held): the FM_SET_* bits taken.
 */
static unsigned take_pending(const struct inode *n, struct filer_meta_set *s)
{
	unsigned take = n->pend_set & ~s->set;

	s->set |= take;
	if (take & FM_SET_MODE)
		s->mode = n->pend_mode;
	if (take & FM_SET_UID)
		s->uid = n->pend_uid;
	if (take & FM_SET_GID)
		s->gid = n->pend_gid;
	return take;
}

/*
 * Uploads n's dirty data and commits it with the fields of extra (may be
 * NULL) and the attributes a setattr kept for it in one update; *out (may be NULL) gets the entry after. With
 * defer_atime, a read's atime with nothing else to commit goes to the touch
 * thread instead (stored within TOUCH_DELAY_NS). With durable (fsync), the
 * file's data is on stable storage on every replica (uploads with fsync=true,
 * then file_data_sync_volumes for chunks uploaded without) before the update,
 * which the filer commits synced; with nothing to commit the update only makes
 * the store's last commits durable, and not even that when nothing changed
 * since the last durable commit (file_data_durable).
 */
static wfs_err commit_node(struct mount_ctx *m, struct inode *n, const struct filer_meta_set *extra,
			   struct filer_entry **out, bool defer_atime, bool durable)
{
	struct filer_meta_set s = {0};
	struct filer_chunk *chunks = NULL;
	struct filer_entry *e = NULL;
	uint8_t *content = NULL;
	char **drops = NULL;
	file_data *fd;
	size_t nc = 0;
	bool flushed = false, atime_only = false, set_mtime;
	int64_t mtime, atime, ctime_before = 0;
	char *path = NULL;
	wfs_err rc = WFS_OK;

	if (extra)
		s = *extra;
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	fd = n->fd;
	mtime = n->data_mtime_ns;
	set_mtime = n->pend_mtime; /* a setattr's: sent even with no data to flush */
	atime = n->atime_pending_ns;
	if (n->cached)
		ctime_before = n->attr.ctime_ns;
	take_pending(n, &s);
	pthread_mutex_unlock(&n->mu);
	if (durable && (!fd || file_data_durable(fd, ctime_before)) && !s.set && !atime &&
	    !set_mtime)
		goto out; /* synced, nothing changed since (a chmod here changed the ctime) */
	if (fd && file_data_flush_inline(fd, &content, &s.content_len)) {
		/* a small file: its bytes go in the entry, one request, no upload */
		flushed = true;
		s.set |= FM_SET_CONTENT;
		s.content = content;
	} else if (fd && file_data_dirty(fd)) {
		rc = durable ? file_data_flush_sync(fd, &chunks, &nc)
			     : file_data_flush(fd, &chunks, &nc);
		if (rc)
			goto out;
		flushed = true;
		s.set |= FM_SET_SIZE;
		s.size = file_data_size(fd);
		if (file_data_flush_replaces(fd)) {
			s.set |= FM_SET_CHUNKS; /* the whole list, possibly empty */
			s.append = chunks;
			s.n_append = nc;
		} else if (nc) {
			s.set |= FM_SET_APPEND;
			s.append = chunks;
			s.n_append = nc;
			s.n_drop = file_data_flush_drops(fd, &drops);
			s.drop = drops;
		}
	}
	if ((flushed || set_mtime) && mtime && !(s.set & FM_SET_MTIME)) {
		s.set |= FM_SET_MTIME;
		s.mtime_ns = mtime;
	}
	/* a read's atime (relatime) goes with the next commit; alone, the touch thread
	   stores it soon after (a read-only close then waits for no round trip) */
	if (atime && !s.set && defer_atime && m->touch_started) {
		bool first;
		pthread_mutex_lock(&n->mu);
		first = !n->atime_queued;
		n->atime_queued = true;
		pthread_mutex_unlock(&n->mu);
		struct inode *q = first ? itable_get(m->it, n->ino) : NULL;
		if (q)
			fuse_attrs_touch_queue(m, q);
		goto out;
	}
	if (atime && !(s.set & FM_SET_ATIME)) {
		atime_only = !s.set;
		s.set |= FM_SET_ATIME;
		s.atime_ns = atime;
	}
	if (durable && fd) {
		/* the chunks first: a durable entry must never name lost bytes */
		rc = file_data_sync_volumes(fd);
		if (rc) {
			if (flushed)
				file_data_commit_result(fd, WFS_EINVAL); /* the filer got nothing */
			log_warn("fsync of inode %llu: %s", (unsigned long long)n->ino,
				 wfs_strerror(rc));
			goto out;
		}
	}
	s.fsync = durable;
	if (!s.set && !durable)
		goto out;
	path = itable_path(m->it, n->ino);
	if (!(s.set & FM_SET_CTIME) && s.set) {
		s.set |= FM_SET_CTIME;
		/* reading changes no ctime: keep the one the entry has */
		s.ctime_ns = atime_only && ctime_before ? ctime_before : now_ns();
	}
	rc = path ? filer_meta_update(m->rpc, path, &s, &e) : WFS_ENOENT;
	if (flushed)
		file_data_commit_result(fd, rc); /* frees dropped chunks unless ambiguous */
	if (fd)
		file_data_set_durable(fd, durable && !rc, rc ? 0 : e->attr.ctime_ns);
	if (!rc) {
		itable_cache(n, e, m->follow_cache_ns);
		pthread_mutex_lock(&n->mu);
		if (fd == n->fd) {
			n->base_ctime_ns = e->attr.ctime_ns;
			if (n->data_mtime_ns == mtime) {
				n->data_mtime_ns = 0;
				n->pend_mtime = false;
			}
		}
		/* commit_mu kept them from changing since take_pending */
		n->pend_set = 0;
		n->pend_ctime_ns = 0;
		n->kc_sig = commit_keeps_pages(n, &s, e) ? data_sig(e) : 0;
		if (n->kc_sig)
			n->kc_chunks_sig = chunks_sig(e->chunks, e->n_chunks);
		pthread_mutex_unlock(&n->mu);
	} else if (atime_only) {
		/* only an access time (the file may be gone): never fails a close */
		log_debug("atime of %s not stored: %s", path ? path : "(gone)", wfs_strerror(rc));
		rc = WFS_OK;
	} else {
		log_warn("commit of %s failed: %s", path ? path : "(gone)", wfs_strerror(rc));
	}
	if (atime && (s.set & FM_SET_ATIME) && (atime_only || !rc)) {
		pthread_mutex_lock(&n->mu);
		if (n->atime_pending_ns == atime)
			n->atime_pending_ns = 0;
		pthread_mutex_unlock(&n->mu);
	}
out:
	pthread_mutex_unlock(&n->commit_mu);
	filer_chunks_free(chunks, nc);
	for (size_t i = 0; i < s.n_drop; i++)
		free(drops[i]);
	free(drops);
	free(content);
	free(path);
	if (out && !rc)
		*out = e;
	else
		filer_entry_free(e);
	return rc;
}

wfs_err fuse_data_commit_node_opt(struct mount_ctx *m, struct inode *n,
				  const struct filer_meta_set *extra, struct filer_entry **out,
				  bool defer_atime)
{
	return commit_node(m, n, extra, out, defer_atime, false);
}

wfs_err fuse_data_commit_node(struct mount_ctx *m, struct inode *n,
			      const struct filer_meta_set *extra, struct filer_entry **out)
{
	return commit_node(m, n, extra, out, true, false);
}

/*
 * Commits files dirty for longer than commit_age_ns, scanning every second: data written
 * and not closed or synced (a long-running writer) reaches the filer anyway, and the
 * chunks it uploaded get referenced before the filer's lease on their ids runs out.
 */
void *fuse_data_commit_main(void *arg)
{
	struct mount_ctx *m = arg;
	uint64_t inos[64];

	pthread_mutex_lock(&m->touch_mu);
	while (!m->touch_stop) {
		struct timespec until;
		size_t n;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec++;
		pthread_cond_timedwait(&m->commit_cv, &m->touch_mu, &until);
		if (m->touch_stop)
			break;
		pthread_mutex_unlock(&m->touch_mu);
		n = mount_data_stale_files(m->md, m->commit_age_ns, inos, 64);
		for (size_t i = 0; i < n; i++) {
			struct inode *node = itable_get(m->it, inos[i]);
			wfs_err rc = node ? fuse_data_commit_node(m, node, NULL, NULL) : WFS_OK;
			if (rc)
				log_warn("background commit of inode %llu failed: %s",
					 (unsigned long long)inos[i], wfs_strerror(rc));
			itable_put(m->it, node);
		}
		pthread_mutex_lock(&m->touch_mu);
	}
	pthread_mutex_unlock(&m->touch_mu);
	return NULL;
}

/*
 * After a shrink to size: the filer keeps a chunk that crosses the new end
 * whole, so a later extension would show its old bytes again instead of
 * zeros. Shorten such chunks (chunks_truncate) and store the list back.
 * Best effort; manifests are left alone.
 */
void fuse_data_clip_after_shrink(struct mount_ctx *m, struct inode *n, uint64_t size)
{
	struct filer_chunk *c = NULL, *garbage = NULL;
	struct filer_entry *e = NULL, *after = NULL;
	size_t nc = 0, ng = 0;
	bool crossing = false;
	char *path = itable_path(m->it, n->ino);

	if (!path || filer_meta_lookup(m->rpc, path, &e))
		goto out;
	for (size_t i = 0; i < e->n_chunks; i++)
		if (e->chunks[i].offset < size && e->chunks[i].offset + e->chunks[i].size > size)
			crossing = true;
	if (!crossing)
		goto out;
	c = xcalloc(e->n_chunks, sizeof(*c));
	for (size_t i = 0; i < e->n_chunks; i++)
		filer_chunk_copy(&c[nc++], &e->chunks[i]);
	if (chunks_truncate(c, &nc, size, &garbage, &ng) == WFS_OK) {
		struct filer_meta_set s = {.set = FM_SET_CHUNKS | FM_SET_SIZE | FM_SET_CTIME,
					   .size = size,
					   .ctime_ns = now_ns(),
					   .append = c,
					   .n_append = nc};
		if (!filer_meta_update(m->rpc, path, &s, &after)) {
			itable_cache(n, after, m->follow_cache_ns);
			pthread_mutex_lock(&n->mu);
			if (n->fd && !file_data_dirty(n->fd)) {
				file_data_reset(n->fd, after);
				n->base_ctime_ns = after->attr.ctime_ns;
			}
			pthread_mutex_unlock(&n->mu);
		}
	}
out:
	filer_chunks_free(c, nc);
	filer_chunks_free(garbage, ng);
	filer_entry_free(e);
	filer_entry_free(after);
	free(path);
}

/*
 * Attaches n's file data for a new handle (a fresh lookup first: close-to-open).
 * *keep: whether the kernel may keep its pages of the file, because they hold
 * the data of the entry just looked up (its data signature is the one the
 * pages were read under, or the open file's own view while it has dirty data).
 */
static wfs_err attach_data(struct mount_ctx *m, struct inode *n, const struct filer_entry *fresh,
			   bool *keep)
{
	struct filer_entry *e = NULL;
	bool need_lookup;
	wfs_err rc = WFS_OK;

	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	need_lookup = !fresh && (!n->fd || !file_data_dirty(n->fd));
	pthread_mutex_unlock(&n->mu);
	if (need_lookup) {
		char *path = itable_path(m->it, n->ino);
		rc = path ? filer_meta_lookup(m->rpc, path, &e) : WFS_ENOENT;
		free(path);
		if (rc)
			goto out;
		fresh = e;
		itable_cache(n, e, m->follow_cache_ns);
	}
	pthread_mutex_lock(&n->mu);
	if (!n->fd) {
		n->fd = file_data_new(m->md, fresh);
		file_data_set_ino(n->fd, n->ino);
		n->base_ctime_ns = fresh->attr.ctime_ns;
		n->data_mtime_ns = 0;
	} else if (fresh && fresh->attr.ctime_ns > n->base_ctime_ns && !file_data_dirty(n->fd)) {
		file_data_reset(n->fd, fresh);
		n->base_ctime_ns = fresh->attr.ctime_ns;
	}
	if (fresh) {
		uint64_t sig = data_sig(fresh);
		*keep = n->kc_sig == sig;
		n->kc_sig = sig;
		n->kc_chunks_sig = chunks_sig(fresh->chunks, fresh->n_chunks);
	} else {
		/* open and dirty: the pages follow this mount's own writes */
		*keep = n->kc_sig != 0;
	}
	n->open_count++;
	pthread_mutex_unlock(&n->mu);
	/*
	 * Close-to-open: the kernel may still hold attributes (the size) from
	 * before another client's close; the event that would drop them can
	 * arrive after this open. Drop them now (attributes only: no page lock,
	 * safe inside a request).
	 */
	if (need_lookup && m->se)
		fuse_lowlevel_notify_inval_inode(m->se, n->ino, -1, 0);
out:
	pthread_mutex_unlock(&n->commit_mu);
	filer_entry_free(e);
	return rc;
}

void fuse_data_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	bool keep = false;
	struct fh *h;
	wfs_err rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (n->is_dir) {
		itable_put(m->it, n);
		fuse_reply_err(req, EISDIR);
		return;
	}
	rc = attach_data(m, n, NULL, &keep);
	if (rc) {
		itable_put(m->it, n);
		fuse_ops_reply_err(req, rc);
		return;
	}
	/* reads the kernel's pages serve never reach the mount: the open counts as the
	 * access (relatime) */
	if (keep && (fi->flags & O_ACCMODE) != O_WRONLY)
		fuse_attrs_note_access(m, n);
	h = fuse_ops_fh_new(m, n, fi->flags);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = keep;
	if (fuse_reply_open(req, fi)) {
		/* the kernel will not release it */
		pthread_mutex_lock(&n->mu);
		n->open_count--;
		pthread_mutex_unlock(&n->mu);
		itable_put(m->it, n);
		fuse_ops_fh_free(m, h);
	}
}

void fuse_data_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct filer_meta_new nw = {
		.mode = S_IFREG | (mode & 07777), .uid = c->uid, .gid = c->gid, .exclusive = true};
	struct filer_entry *e = NULL;
	struct fuse_entry_param ep;
	struct inode *n = NULL;
	bool keep = false;
	struct fh *h;
	char *path = fuse_names_new_child(req, parent, name, &nw);
	wfs_err rc;

	if (!path)
		return;
	rc = filer_meta_create(m->rpc, path, &nw, &e);
	if (rc == WFS_EEXIST && !(fi->flags & O_EXCL)) {
		/* lost a race with another creator: open what is there */
		rc = filer_meta_lookup(m->rpc, path, &e);
		if (!rc && S_ISDIR(e->attr.mode))
			rc = WFS_EISDIR;
		if (!rc && (fi->flags & O_TRUNC) && e->attr.size) {
			struct filer_meta_set s = {.set = FM_SET_SIZE | FM_SET_MTIME,
						   .mtime_ns = now_ns()};
			filer_entry_free(e);
			e = NULL;
			rc = filer_meta_update(m->rpc, path, &s, &e);
		}
	} else if (!rc) {
		fuse_attrs_touch_dir(m, parent);
	}
	free(path);
	if (rc)
		goto fail;
	rc = fuse_ops_learn(m, parent, name, e, &ep);
	if (rc)
		goto fail;
	n = itable_get(m->it, ep.ino);
	rc = attach_data(m, n, e, &keep);
	if (rc) {
		itable_forget(m->it, ep.ino, 1);
		goto fail;
	}
	h = fuse_ops_fh_new(m, n, fi->flags);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = keep;
	if (fuse_reply_create(req, &ep, fi)) {
		pthread_mutex_lock(&n->mu);
		n->open_count--;
		pthread_mutex_unlock(&n->mu);
		itable_forget(m->it, ep.ino, 1);
		itable_put(m->it, n);
		fuse_ops_fh_free(m, h);
	}
	filer_entry_free(e);
	return;
fail:
	itable_put(m->it, n);
	filer_entry_free(e);
	fuse_ops_reply_err(req, rc);
}

static struct fh *get_fh(struct fuse_file_info *fi) { return (struct fh *)(uintptr_t)fi->fh; }

void fuse_data_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fh *h = get_fh(fi);
	size_t got = 0;
	char *b;
	wfs_err rc;

	(void)ino;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* a reply of up to 1 MiB: a recycled block, not fresh pages to fault in each time */
	b = bigbuf_get(size ? size : 1, NULL);
	rc = file_data_read(h->node->fd, (uint64_t)off, size, b, &got);
	if (!rc)
		fuse_attrs_note_access(ctx(req), h->node);
	if (rc)
		fuse_ops_reply_err(req, rc);
	else
		fuse_reply_buf(req, b, got);
	bigbuf_put(b);
}

void fuse_data_note_write(struct inode *n)
{
	pthread_mutex_lock(&n->mu);
	n->data_mtime_ns = now_ns();
	n->pend_mtime = false; /* a write after a setattr's mtime: the write's, as on ext4 */
	pthread_mutex_unlock(&n->mu);
}

/*
 * The kernel clears suid, and sgid with group-execute, on a write by an
 * unprivileged process (a setattr before the write). Local file systems also
 * drop a set-group-ID bit without group-execute when the writer is not in
 * the file's group; FUSE leaves that to the file system.
 */
static void drop_sgid_on_write(fuse_req_t req, struct inode *n)
{
	struct mount_ctx *m = ctx(req);
	struct filer_meta_set s = {.set = FM_SET_MODE | FM_SET_CTIME};
	struct filer_entry *e = NULL;
	uint32_t mode = 0, gid = 0;
	char *path;

	pthread_mutex_lock(&n->mu);
	if (n->cached) {
		mode = n->attr.mode;
		gid = n->attr.gid;
	}
	if (n->pend_set & FM_SET_MODE)
		mode = n->pend_mode; /* a setattr's, not stored yet */
	if (n->pend_set & FM_SET_GID)
		gid = n->pend_gid;
	pthread_mutex_unlock(&n->mu);
	if ((mode & (S_ISGID | S_IXGRP)) != S_ISGID || fuse_req_ctx(req)->uid == 0 ||
	    fuse_ops_in_group(req, gid))
		return;
	s.mode = mode & 07777 & ~(uint32_t)S_ISGID;
	s.ctime_ns = now_ns();
	/* the data just written is dirty: usually stored with its commit */
	if (!fuse_attrs_defer(n, &s)) {
		path = itable_path(m->it, n->ino);
		if (!path)
			return;
		if (!filer_meta_update(m->rpc, path, &s, &e))
			itable_cache(n, e, m->follow_cache_ns);
		filer_entry_free(e);
		free(path);
	}
	if (m->se)
		fuse_lowlevel_notify_inval_inode(m->se, n->ino, -1, 0);
}

void fuse_data_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fh *h = get_fh(fi);
	struct inode *n = h->node;
	uint64_t at = (uint64_t)off;
	wfs_err rc;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* its lock was lost (fuse_locks.c): ENOLCK; a kernel's writeback is never failed */
	if (!ctx(req)->writeback_cache && fuse_locks_io_lost(req, ino, fi))
		return;
	/* O_APPEND: the end as this mount knows it now, not the kernel's cached size */
	if ((h->flags & O_APPEND) && !ctx(req)->writeback_cache)
		at = file_data_size(n->fd);
	rc = file_data_write(n->fd, at, data, size);
	if (rc) {
		fuse_ops_reply_err(req, rc); /* WFS_ENOSPC: the cluster is full */
		return;
	}
	fuse_data_note_write(n);
	drop_sgid_on_write(req, n);
	/* O_SYNC / O_DSYNC (O_SYNC includes its bit): durable before write() returns */
	if (h->flags & O_DSYNC) {
		rc = commit_node(ctx(req), n, NULL, NULL, false, true);
		if (rc) {
			fuse_ops_reply_err(req, rc);
			return;
		}
	}
	fuse_reply_write(req, size);
}

void fuse_data_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_locks_flush(ctx(req), ino, fi->lock_owner); /* close drops the owner's locks */
	fuse_ops_reply_err(req, fuse_data_commit_node(ctx(req), get_fh(fi)->node, NULL, NULL));
}

/* fsync, fdatasync, msync(MS_SYNC), and the kernel's sync after an O_SYNC write. */
void fuse_data_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync; /* the entry holds the chunk list: it must be durable either way */
	if (fuse_locks_io_lost(req, ino, fi))
		return; /* its lock was lost (fuse_locks.c): ENOLCK; the data stays dirty */
	fuse_ops_reply_err(req, commit_node(ctx(req), get_fh(fi)->node, NULL, NULL, false, true));
}

void fuse_data_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct fh *h = get_fh(fi);
	struct inode *n = h->node;
	char *hidden = NULL;
	wfs_err rc;

	if (fi->flock_release)
		fuse_locks_release(m, ino, fi->lock_owner);
	rc = fuse_data_commit_node(m, n, NULL, NULL);
	if (rc)
		log_error("ino %llu: data not committed at close: %s", (unsigned long long)n->ino,
			  wfs_strerror(rc));
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	if (--n->open_count == 0) {
		if (n->fd && !file_data_dirty(n->fd)) {
			file_data_free(n->fd);
			n->fd = NULL;
			n->data_mtime_ns = 0;
		}
		if (n->unlinked) {
			hidden = n->hidden_name;
			n->hidden_name = NULL;
		}
		n->unlinked = false;
	}
	pthread_mutex_unlock(&n->mu);
	pthread_mutex_unlock(&n->commit_mu);
	if (hidden) {
		/* forget the hidden name first: an open through another name of a
		 * linked file (the kernel sends release after close returned) must
		 * not look up the name being deleted */
		uint64_t tino = fuse_names_trash_ino(m);
		char *path = tino ? itable_child_path(m->it, tino, hidden) : NULL;
		if (path) {
			itable_unlink(m->it, tino, hidden);
			filer_meta_delete(m->rpc, path, false);
			/* the other names' nlink dropped with it (the mount's own change: no
			 * event comes back to say so) */
			itable_uncache(n);
		}
		free(path);
		free(hidden);
	}
	itable_put(m->it, n);
	fuse_ops_fh_free(m, h);
	fuse_reply_err(req, 0);
}

void fuse_data_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct fh *h = get_fh(fi);
	wfs_err rc;

	(void)ino;
	/* PUNCH_HOLE needs KEEP_SIZE and excludes ZERO_RANGE (the VFS checks it too) */
	if ((mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) ||
	    ((mode & FALLOC_FL_PUNCH_HOLE) &&
	     (!(mode & FALLOC_FL_KEEP_SIZE) || (mode & FALLOC_FL_ZERO_RANGE)))) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((uint64_t)len > (uint64_t)INT64_MAX - (uint64_t)off) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
		/* committed at once, as a size change is: the hole shows everywhere */
		rc = file_data_punch(h->node->fd, (uint64_t)off, (uint64_t)len,
				     mode & FALLOC_FL_KEEP_SIZE);
	} else if (!(mode & FALLOC_FL_KEEP_SIZE) &&
		   (uint64_t)off + (uint64_t)len > file_data_size(h->node->fd)) {
		/* no space to reserve in a cluster: only the size moves (KEEP_SIZE: nothing) */
		rc = file_data_truncate(h->node->fd, (uint64_t)off + (uint64_t)len);
	} else {
		fuse_reply_err(req, 0);
		return;
	}
	if (!rc) {
		fuse_data_note_write(h->node);
		rc = fuse_data_commit_node(ctx(req), h->node, NULL, NULL);
	}
	fuse_ops_reply_err(req, rc);
}

void fuse_data_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t pos = 0;
	wfs_err rc;

	(void)ino;
	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		fuse_reply_err(req, EINVAL); /* the kernel answers the others itself */
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	rc = file_data_seek(get_fh(fi)->node->fd, (uint64_t)off, whence, &pos);
	if (rc)
		fuse_ops_reply_err(req, rc);
	else if (pos == FILE_DATA_SEEK_NONE)
		fuse_reply_err(req, ENXIO); /* past the end, or no data after off */
	else
		fuse_reply_lseek(req, (off_t)pos);
}

#define COPY_PIECE (1u << 20)   /* bytes read, then written, at a time */
#define COPY_MAX   (1ull << 30) /* per request: a short copy, the caller loops */

/*
 * copy_file_range within this mount: the source's bytes (dirty ones included) are read
 * and written into the destination as a write would, a piece at a time. Sharing the
 * source's chunks instead is not safe: the filer frees a chunk as soon as one entry stops
 * naming it. Between two mounts the kernel gets EXDEV and copies with reads and writes.
 */
void fuse_data_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct fh *hi = get_fh(fi_in), *ho = get_fh(fi_out);
	file_data *src = hi->node->fd, *dst = ho->node->fd;
	uint64_t size, done = 0;
	uint8_t *b = NULL;
	wfs_err rc = WFS_OK;

	(void)ino_in;
	(void)ino_out;
	if (flags || off_in < 0 || off_out < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if ((hi->flags & O_ACCMODE) == O_WRONLY || (ho->flags & O_ACCMODE) == O_RDONLY ||
	    (ho->flags & O_APPEND)) {
		fuse_reply_err(req, EBADF);
		return;
	}
	size = file_data_size(src);
	len = (size_t)MIN((uint64_t)len, COPY_MAX);
	len = (size_t)MIN((uint64_t)len, size > (uint64_t)off_in ? size - (uint64_t)off_in : 0);
	if (!len) {
		fuse_reply_write(req, 0);
		return;
	}
	if ((uint64_t)len > (uint64_t)INT64_MAX - (uint64_t)off_out) {
		fuse_reply_err(req, EFBIG);
		return;
	}
	if (hi->node == ho->node && (uint64_t)off_out < (uint64_t)off_in + len &&
	    (uint64_t)off_in < (uint64_t)off_out + len) {
		fuse_reply_err(req, EINVAL); /* overlapping ranges of one file */
		return;
	}
	b = xmalloc(MIN((uint64_t)len, COPY_PIECE));
	while (done < len) {
		size_t piece = (size_t)MIN((uint64_t)COPY_PIECE, len - done), got = 0;
		rc = file_data_read(src, (uint64_t)off_in + done, piece, b, &got);
		if (!rc && got)
			rc = file_data_write(dst, (uint64_t)off_out + done, b, got);
		if (rc)
			break;
		done += got;
		if (got < piece)
			break; /* the source ended (cut meanwhile) */
	}
	free(b);
	if (done) {
		fuse_attrs_note_access(ctx(req), hi->node);
		fuse_data_note_write(ho->node);
		drop_sgid_on_write(req, ho->node);
		fuse_reply_write(req, (size_t)done); /* an error after some bytes: a short copy */
	} else if (rc) {
		fuse_ops_reply_err(req, rc);
	} else {
		fuse_reply_write(req, 0);
	}
}
