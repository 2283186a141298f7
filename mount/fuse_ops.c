/*
 * The FUSE low-level operations (fuse_ops.h).
 *
 * DESIGN:
 * - Names: an operation on (parent, name) builds the filer path from the
 *   inode table and calls the filer's entry API; the answer's entry is cached
 *   on the node and handed to the kernel with the entry/attr timeouts. The
 *   mount's own cache (lookup, getattr, getxattr answer from it) is trusted
 *   for attrTimeout, or as long as the event follower is connected, since it
 *   drops an entry the moment someone else changes it (meta_follower.c). The
 *   mount notes its own changes (mount_note_own) so the follower can tell
 *   them from others'.
 * - Permissions: the mount runs with the kernel's default_permissions, so the
 *   kernel checks mode bits, sticky directories, chown/chmod rights and clears
 *   suid/sgid on write and chown (it sends the cleared mode in a setattr).
 *   The mount adds what the kernel leaves to the file system: setgid
 *   directories hand their group (and, to subdirectories, the setgid bit) to
 *   new entries, and a new file's setgid bit is dropped when its creator is
 *   not in the group. Parent directories get mtime/ctime on every change of
 *   their names.
 * - Data: one file_data per inode (file_data.h), created at the first open
 *   from a fresh lookup (close-to-open), shared by every handle, committed on
 *   flush, fsync and release as one update {appendChunks (or the whole list
 *   when file_data_flush_replaces), size, mtime}. A name of an open file that
 *   is unlinked (or replaced by a rename) is renamed into a hidden directory
 *   (MOUNT_TRASH_NAME) instead, so the file and its chunks stay until the
 *   last release deletes that name; st_nlink does not count it.
 * - Directories: readdir and readdirplus page through the filer's list; a
 *   handle keeps the current page, offsets are entry indexes (0 ".", 1 "..").
 */
#include "config.h"
#include "fuse_ops.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include "filer/chunks.h"
#include "filer_meta.h"
#include "fuse_locks.h"
#include "json.h"
#include "log.h"
#include "utf8.h"
#include "util.h"

#define LIST_PAGE 1024

/* An open file. */
struct fh {
	struct inode *node;     /* a reference (itable_put at release) */
	int flags;              /* open(2) flags */
	struct fh *prev, *next; /* m->handles, protected by m->fh_mu */
};

static struct fh *fh_new(struct mount_ctx *m, struct inode *n, int flags)
{
	struct fh *h = xcalloc(1, sizeof(*h));

	h->node = n;
	h->flags = flags;
	pthread_mutex_lock(&m->fh_mu);
	h->next = m->handles;
	if (h->next)
		h->next->prev = h;
	m->handles = h;
	pthread_mutex_unlock(&m->fh_mu);
	return h;
}

static void fh_free(struct mount_ctx *m, struct fh *h)
{
	pthread_mutex_lock(&m->fh_mu);
	if (h->prev)
		h->prev->next = h->next;
	else
		m->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&m->fh_mu);
	free(h);
}

/* An open directory. */
struct dirh {
	pthread_mutex_t mu;
	uint64_t ino;
	struct filer_meta_page page; /* protected by mu: the current page */
	uint64_t page_base;          /* index (without . and ..) of page.entries[0] */
	bool fetched;                /* page holds a real answer */
};

static uint64_t own_key(const char *path, int64_t ctime_ns)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull;
	}
	h ^= (uint64_t)ctime_ns * 0x9e3779b97f4a7c15ull;
	return h ? h : 1;
}

void mount_note_own(struct mount_ctx *m, const char *path, int64_t ctime_ns)
{
	uint64_t k = own_key(path, ctime_ns);

	pthread_mutex_lock(&m->own_mu);
	m->own[k % MOUNT_OWN_SLOTS] = k;
	pthread_mutex_unlock(&m->own_mu);
}

bool mount_take_own(struct mount_ctx *m, const char *path, int64_t ctime_ns)
{
	uint64_t k = own_key(path, ctime_ns);
	bool r;

	pthread_mutex_lock(&m->own_mu);
	r = m->own[k % MOUNT_OWN_SLOTS] == k;
	if (r)
		m->own[k % MOUNT_OWN_SLOTS] = 0;
	pthread_mutex_unlock(&m->own_mu);
	return r;
}

static struct mount_ctx *ctx(fuse_req_t req) { return fuse_req_userdata(req); }

static int64_t now_ns(void) { return (int64_t)time_now_ns(); }

static void ns_to_ts(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	if (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += 1000000000;
	}
}

static int64_t ts_to_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

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

/*
 * The kernel's attributes of the entry e, with open data (size, mtime) and a
 * read's atime not yet stored winning.
 */
static void entry_stat(struct inode *n, const struct filer_entry *e, struct stat *st)
{
	const struct filer_attr *a = &e->attr;
	uint64_t alloc;

	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_mode = a->mode;
	/* directories: 1, the filer does not count subdirectories (btrfs does the
	 * same; find(1) then skips its leaf optimisation) */
	st->st_nlink = S_ISDIR(a->mode) ? 1 : (a->nlink ? a->nlink : 1);
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = (dev_t)a->rdev;
	st->st_size = (off_t)a->size;
	if (S_ISLNK(a->mode) && a->symlink_target)
		st->st_size = (off_t)strlen(a->symlink_target);
	else if (S_ISDIR(a->mode))
		st->st_size = 4096;
	ns_to_ts(a->mtime_ns, &st->st_mtim);
	ns_to_ts(a->atime_ns ? a->atime_ns : a->mtime_ns, &st->st_atim);
	ns_to_ts(a->ctime_ns, &st->st_ctim);
	pthread_mutex_lock(&n->mu);
	if (n->atime_pending_ns)
		ns_to_ts(n->atime_pending_ns, &st->st_atim);
	/* a directory's times from a name change not stored yet (touch_dir) */
	if (n->touch_pending_ns && n->touch_pending_ns > a->mtime_ns)
		ns_to_ts(n->touch_pending_ns, &st->st_mtim);
	if (n->touch_pending_ns && n->touch_pending_ns > a->ctime_ns)
		ns_to_ts(n->touch_pending_ns, &st->st_ctim);
	if (n->unlinked && st->st_nlink)
		st->st_nlink--; /* the hidden name does not count */
	if (n->removed)
		st->st_nlink = 0;
	alloc = S_ISREG(a->mode) ? n->alloc_bytes : 0;
	if (n->fd) {
		st->st_size = (off_t)file_data_size(n->fd);
		/* dirty bytes may fill holes: never report fewer blocks than data (tar and
		 * cp take st_blocks 0 as "all holes") until the commit tells */
		if (file_data_dirty(n->fd))
			alloc = (uint64_t)st->st_size;
		if (n->data_mtime_ns) {
			ns_to_ts(n->data_mtime_ns, &st->st_mtim);
			ns_to_ts(n->data_mtime_ns, &st->st_ctim);
		}
	}
	pthread_mutex_unlock(&n->mu);
	if (alloc > (uint64_t)st->st_size)
		alloc = (uint64_t)st->st_size;
	st->st_blksize = 1 << 20;
	/* what the chunks cover, not the size: a sparse file shows its holes */
	st->st_blocks = (blkcnt_t)((alloc + 511) / 512);
}

/*
 * Whether n's cached entry may be used (n->mu held): within attrTimeout, or
 * longer while the event follower is connected (it drops the entry as soon
 * as someone else changes it).
 */
static bool cache_fresh(struct mount_ctx *m, struct inode *n)
{
	uint64_t now = time_mono_ns();

	if (!n->cached_until || now >= n->cached_until)
		return false;
	return atomic_load(&m->following) || now < n->cached_at + m->attr_cache_ns;
}

/* The node's entry: the cached one while fresh (or any cached one with stale_ok), else a lookup. */
static int node_entry(struct mount_ctx *m, struct inode *n, bool stale_ok, struct filer_entry **out)
{
	struct filer_entry *e = NULL;
	char *path;
	int rc;

	pthread_mutex_lock(&n->mu);
	if (n->cached && (stale_ok || cache_fresh(m, n)))
		e = itable_cached_entry(n);
	pthread_mutex_unlock(&n->mu);
	if (e) {
		*out = e;
		return 0;
	}
	path = itable_path(m->it, n->ino);
	if (!path)
		return ENOENT;
	rc = filer_meta_lookup(m->rpc, path, &e);
	free(path);
	if (rc)
		return rc;
	itable_cache(n, e, m->follow_cache_ns);
	*out = e;
	return 0;
}

static bool name_ok(fuse_req_t req, const char *name)
{
	size_t len = strlen(name);

	if (len > FILER_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return false;
	}
	/* the filer's API is JSON: a name that is not UTF-8 cannot be sent */
	for (size_t i = 0; i < len;) {
		size_t k = utf8_decode((const unsigned char *)name + i, len - i, NULL);
		if (!k) {
			fuse_reply_err(req, EINVAL);
			return false;
		}
		i += k;
	}
	return true;
}

/* Path of (parent, name); replies the error itself and returns NULL on failure. */
static char *child_path(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	char *p;

	if (!name_ok(req, name))
		return NULL;
	p = itable_child_path(m->it, parent, name);
	if (!p) {
		fuse_reply_err(req, ENOENT);
		return NULL;
	}
	if (strlen(p) > FILER_PATH_MAX) {
		free(p);
		fuse_reply_err(req, ENAMETOOLONG);
		return NULL;
	}
	return p;
}

/* Learns e as name in parent and fills ep (one lookup reference taken). */
static int learn(struct mount_ctx *m, fuse_ino_t parent, const char *name,
		 const struct filer_entry *e, struct fuse_entry_param *ep)
{
	uint64_t ino = itable_learn(m->it, parent, name, e, m->follow_cache_ns);
	struct inode *n;

	if (!ino)
		return ENOENT;
	n = itable_get(m->it, ino);
	memset(ep, 0, sizeof(*ep));
	ep->ino = ino;
	ep->generation = 1;
	entry_stat(n, e, &ep->attr);
	ep->attr_timeout = m->attr_timeout;
	ep->entry_timeout = m->entry_timeout;
	itable_put(m->it, n);
	return 0;
}

static void reply_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			const struct filer_entry *e)
{
	struct mount_ctx *m = ctx(req);
	struct fuse_entry_param ep;
	int rc = learn(m, parent, name, e, &ep);

	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	if (fuse_reply_entry(req, &ep))
		itable_forget(m->it, ep.ino, 1);
}

static void touch_dir_now(struct mount_ctx *m, fuse_ino_t dir);

/* A burst of name changes in a directory costs one store of its times. */
#define TOUCH_DELAY_NS (50 * 1000000ll)

/*
 * Sets a directory's mtime and ctime to now (a name in it changed): at once
 * in the mount's cached entry (what stat shows here), in the filer within
 * TOUCH_DELAY_NS by the touch thread, so a create costs no extra round trip.
 * Without a cached entry (or before the thread runs) it stores them at once.
 * Best effort.
 */
/* Hands n (its reference taken) to the touch thread. */
static void touch_queue(struct mount_ctx *m, struct inode *n)
{
	pthread_mutex_lock(&m->touch_mu);
	if (m->n_touch == m->cap_touch) {
		m->cap_touch = m->cap_touch ? m->cap_touch * 2 : 64;
		m->touch = xrealloc(m->touch, m->cap_touch * sizeof(*m->touch));
	}
	m->touch[m->n_touch++] = n; /* the list keeps the reference */
	pthread_cond_signal(&m->touch_cv);
	pthread_mutex_unlock(&m->touch_mu);
}

static void touch_dir(struct mount_ctx *m, fuse_ino_t dir)
{
	struct inode *n;
	bool queued = false, first = false;
	int64_t now = now_ns();

	if (!m->touch_started) {
		touch_dir_now(m, dir);
		return;
	}
	n = itable_get(m->it, dir);
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->cached) {
		n->attr.mtime_ns = now;
		if (n->attr.ctime_ns < now)
			n->attr.ctime_ns = now;
		first = !n->touch_pending_ns;
		n->touch_pending_ns = now;
		queued = true;
	}
	pthread_mutex_unlock(&n->mu);
	if (!queued) {
		itable_put(m->it, n);
		touch_dir_now(m, dir);
		return;
	}
	if (!first) {
		itable_put(m->it, n); /* already queued */
		return;
	}
	touch_queue(m, n);
}

static int commit_node_opt(struct mount_ctx *m, struct inode *n, const struct filer_meta_set *extra,
			   struct filer_entry **out, bool defer_atime);

/* Stores n's pending directory times, or a file's read atime (touch thread). */
static void touch_send(struct mount_ctx *m, struct inode *n)
{
	struct filer_meta_set s = {.set = FM_SET_MTIME | FM_SET_CTIME};
	char *path = NULL;

	if (!n->is_dir) {
		pthread_mutex_lock(&n->mu);
		n->atime_queued = false;
		pthread_mutex_unlock(&n->mu);
		commit_node_opt(m, n, NULL, NULL, false);
		return;
	}

	/* commit_mu: a setattr of the mtime (tar restoring it) is not overtaken */
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	s.mtime_ns = s.ctime_ns = n->touch_pending_ns;
	n->touch_pending_ns = 0;
	if (n->cached && n->attr.ctime_ns > s.ctime_ns)
		s.ctime_ns = n->attr.ctime_ns;
	pthread_mutex_unlock(&n->mu);
	if (s.mtime_ns)
		path = itable_path(m->it, n->ino);
	if (path) {
		mount_note_own(m, path, s.ctime_ns);
		filer_meta_update(m->rpc, path, &s, NULL); /* ENOENT: removed since */
	}
	pthread_mutex_unlock(&n->commit_mu);
	free(path);
}

static void *touch_main(void *arg)
{
	struct mount_ctx *m = arg;

	pthread_mutex_lock(&m->touch_mu);
	for (;;) {
		struct inode **v;
		size_t nv;
		while (!m->n_touch && !m->touch_stop)
			pthread_cond_wait(&m->touch_cv, &m->touch_mu);
		if (!m->n_touch)
			break; /* stopping, nothing left */
		if (!m->touch_stop) {
			/* let the burst of changes gather */
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += TOUCH_DELAY_NS;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			while (!m->touch_stop &&
			       pthread_cond_timedwait(&m->touch_cv, &m->touch_mu, &until) == 0)
				;
		}
		v = m->touch;
		nv = m->n_touch;
		m->touch = NULL;
		m->n_touch = m->cap_touch = 0;
		pthread_mutex_unlock(&m->touch_mu);
		for (size_t i = 0; i < nv; i++) {
			touch_send(m, v[i]);
			itable_put(m->it, v[i]);
		}
		free(v);
		pthread_mutex_lock(&m->touch_mu);
	}
	pthread_mutex_unlock(&m->touch_mu);
	return NULL;
}

static int commit_node(struct mount_ctx *m, struct inode *n, const struct filer_meta_set *extra,
		       struct filer_entry **out);

/*
 * Commits files dirty for longer than commit_age_ns, scanning every second: data written
 * and not closed or synced (a long-running writer) reaches the filer anyway, and the
 * chunks it uploaded get referenced before the filer's lease on their ids runs out.
 */
static void *commit_main(void *arg)
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
			int rc = node ? commit_node(m, node, NULL, NULL) : 0;
			if (rc)
				log_warn("background commit of inode %llu failed: %s",
					 (unsigned long long)inos[i], strerror(rc));
			itable_put(m->it, node);
		}
		pthread_mutex_lock(&m->touch_mu);
	}
	pthread_mutex_unlock(&m->touch_mu);
	return NULL;
}

void fuse_ops_start(struct mount_ctx *m)
{
	pthread_mutex_init(&m->touch_mu, NULL);
	pthread_cond_init(&m->touch_cv, NULL);
	m->touch_stop = false;
	if (pthread_create(&m->touch_thread, NULL, touch_main, m)) {
		log_warn("no directory-time thread: name changes store them at once");
		pthread_cond_destroy(&m->touch_cv);
		pthread_mutex_destroy(&m->touch_mu);
		return;
	}
	m->touch_started = true;
	pthread_cond_init(&m->commit_cv, NULL);
	if (m->commit_age_ns && !pthread_create(&m->commit_thread, NULL, commit_main, m))
		m->commit_started = true;
	else if (m->commit_age_ns)
		log_warn("no background commit thread: files commit at close and fsync only");
}

void fuse_ops_stop(struct mount_ctx *m)
{
	if (!m->touch_started)
		return;
	pthread_mutex_lock(&m->touch_mu);
	m->touch_stop = true;
	pthread_cond_signal(&m->touch_cv);
	pthread_cond_signal(&m->commit_cv);
	pthread_mutex_unlock(&m->touch_mu);
	pthread_join(m->touch_thread, NULL);
	if (m->commit_started)
		pthread_join(m->commit_thread, NULL);
	m->commit_started = false;
	pthread_cond_destroy(&m->commit_cv);
	m->touch_started = false;
	free(m->touch);
	m->touch = NULL;
	pthread_cond_destroy(&m->touch_cv);
	pthread_mutex_destroy(&m->touch_mu);
}

/* Stores a directory's mtime and ctime of now in the filer. Best effort. */
static void touch_dir_now(struct mount_ctx *m, fuse_ino_t dir)
{
	struct filer_meta_set s = {.set = FM_SET_MTIME | FM_SET_CTIME};
	struct filer_entry *e = NULL;
	struct inode *n;
	char *path = itable_path(m->it, dir);

	if (!path)
		return;
	s.mtime_ns = s.ctime_ns = now_ns();
	mount_note_own(m, path, s.ctime_ns);
	if (!filer_meta_update(m->rpc, path, &s, &e)) {
		n = itable_get(m->it, dir);
		if (n)
			itable_cache(n, e, m->follow_cache_ns);
		itable_put(m->it, n);
	}
	filer_entry_free(e);
	free(path);
}

/* Sets the ctime of the entry at path (node n, may be NULL) to now. Best effort. */
static void touch_ctime(struct mount_ctx *m, struct inode *n, const char *path)
{
	struct filer_meta_set s = {.set = FM_SET_CTIME, .ctime_ns = now_ns()};
	struct filer_entry *e = NULL;

	mount_note_own(m, path, s.ctime_ns);
	if (!filer_meta_update(m->rpc, path, &s, &e) && n)
		itable_cache(n, e, m->follow_cache_ns);
	else if (n)
		itable_uncache(n);
	filer_entry_free(e);
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
 * Uploads n's dirty data and commits it with the fields of extra (may be
 * NULL) in one update; *out (may be NULL) gets the entry after. With
 * defer_atime, a read's atime with nothing else to commit goes to the touch
 * thread instead (stored within TOUCH_DELAY_NS).
 */
static int commit_node_opt(struct mount_ctx *m, struct inode *n, const struct filer_meta_set *extra,
			   struct filer_entry **out, bool defer_atime)
{
	struct filer_meta_set s = {0};
	struct filer_chunk *chunks = NULL;
	struct filer_entry *e = NULL;
	uint8_t *content = NULL;
	char **drops = NULL;
	file_data *fd;
	size_t nc = 0;
	bool flushed = false, atime_only = false;
	int64_t mtime, atime, ctime_before = 0;
	char *path = NULL;
	int rc = 0;

	if (extra)
		s = *extra;
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	fd = n->fd;
	mtime = n->data_mtime_ns;
	atime = n->atime_pending_ns;
	if (n->cached)
		ctime_before = n->attr.ctime_ns;
	pthread_mutex_unlock(&n->mu);
	if (fd && file_data_dirty(fd) && file_data_flush_inline(fd, &content, &s.content_len)) {
		/* a small file: its bytes go in the entry, one request, no upload */
		flushed = true;
		s.set |= FM_SET_CONTENT;
		s.content = content;
		if (mtime && !(s.set & FM_SET_MTIME)) {
			s.set |= FM_SET_MTIME;
			s.mtime_ns = mtime;
		}
	} else if (fd && file_data_dirty(fd)) {
		rc = file_data_flush(fd, &chunks, &nc);
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
		if (mtime && !(s.set & FM_SET_MTIME)) {
			s.set |= FM_SET_MTIME;
			s.mtime_ns = mtime;
		}
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
			touch_queue(m, q);
		goto out;
	}
	if (atime && !(s.set & FM_SET_ATIME)) {
		atime_only = !s.set;
		s.set |= FM_SET_ATIME;
		s.atime_ns = atime;
	}
	if (!s.set)
		goto out;
	path = itable_path(m->it, n->ino);
	if (!(s.set & FM_SET_CTIME)) {
		s.set |= FM_SET_CTIME;
		/* reading changes no ctime: keep the one the entry has */
		s.ctime_ns = atime_only && ctime_before ? ctime_before : now_ns();
	}
	if (path)
		mount_note_own(m, path, s.ctime_ns);
	rc = path ? filer_meta_update(m->rpc, path, &s, &e) : ENOENT;
	if (flushed)
		file_data_commit_result(fd, rc); /* frees dropped chunks unless ambiguous */
	if (!rc) {
		itable_cache(n, e, m->follow_cache_ns);
		pthread_mutex_lock(&n->mu);
		if (fd == n->fd) {
			n->base_ctime_ns = e->attr.ctime_ns;
			if (n->data_mtime_ns == mtime)
				n->data_mtime_ns = 0;
		}
		n->kc_sig = commit_keeps_pages(n, &s, e) ? data_sig(e) : 0;
		if (n->kc_sig)
			n->kc_chunks_sig = chunks_sig(e->chunks, e->n_chunks);
		pthread_mutex_unlock(&n->mu);
	} else if (atime_only) {
		/* only an access time (the file may be gone): never fails a close */
		log_debug("atime of %s not stored: %s", path ? path : "(gone)", strerror(rc));
		rc = 0;
	} else {
		log_warn("commit of %s failed: %s", path ? path : "(gone)", strerror(rc));
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

static int commit_node(struct mount_ctx *m, struct inode *n, const struct filer_meta_set *extra,
		       struct filer_entry **out)
{
	return commit_node_opt(m, n, extra, out, true);
}

/*
 * After a shrink to size: the filer keeps a chunk that crosses the new end
 * whole, so a later extension would show its old bytes again instead of
 * zeros. Shorten such chunks (chunks_truncate) and store the list back.
 * Best effort; manifests are left alone.
 */
static void clip_after_shrink(struct mount_ctx *m, struct inode *n, uint64_t size)
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
		mount_note_own(m, path, s.ctime_ns);
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

/* ---- the hidden directory of files unlinked while open ---- */

static uint64_t trash_ino(struct mount_ctx *m)
{
	struct filer_meta_new nw = {.mode = S_IFDIR | 0700, .exclusive = true};
	struct filer_entry *e = NULL;
	uint64_t ino;
	char *path;
	int rc;

	pthread_mutex_lock(&m->trash_mu);
	ino = m->trash_ino;
	if (ino)
		goto out;
	path = itable_child_path(m->it, ITABLE_ROOT, MOUNT_TRASH_NAME);
	rc = filer_meta_create(m->rpc, path, &nw, &e);
	if (rc == EEXIST)
		rc = filer_meta_lookup(m->rpc, path, &e);
	free(path);
	if (!rc && (e->attr.mode & S_IFMT) == S_IFDIR)
		ino = m->trash_ino = itable_learn(m->it, ITABLE_ROOT, MOUNT_TRASH_NAME, e, 0);
	filer_entry_free(e);
out:
	pthread_mutex_unlock(&m->trash_mu);
	return ino;
}

static bool is_trash(fuse_ino_t parent, const char *name)
{
	return parent == ITABLE_ROOT && !strcmp(name, MOUNT_TRASH_NAME);
}

/*
 * Moves the open file n, known as (parent, name) at path, into the hidden
 * directory. Returns 0, or an errno when it could not (the caller then
 * deletes as usual).
 */
static int hide_open_file(struct mount_ctx *m, struct inode *n, fuse_ino_t parent, const char *name,
			  const char *path)
{
	uint64_t tino = trash_ino(m);
	char hidden[64], *to;
	int rc;

	if (!tino)
		return EIO;
	snprintf(hidden, sizeof(hidden), "%016llx-%llu", (unsigned long long)m->mount_id,
		 (unsigned long long)n->ino);
	to = itable_child_path(m->it, tino, hidden);
	if (!to)
		return EIO;
	mount_note_own(m, path, MOUNT_OWN_GONE);
	rc = filer_meta_rename(m->rpc, path, to, false, false);
	free(to);
	if (rc)
		return rc;
	itable_rename(m->it, parent, name, tino, hidden, false);
	pthread_mutex_lock(&n->mu);
	n->unlinked = true;
	free(n->hidden_name);
	n->hidden_name = xstrdup(hidden);
	pthread_mutex_unlock(&n->mu);
	itable_uncache(n);
	return 0;
}

/*
 * Whether n is open, so removing a name of it must hide it instead: also for a
 * linked file, whose other names this mount may not know (a node without a
 * name could not commit). entry_stat takes the hidden name out of st_nlink.
 */
static bool open_file(struct inode *n)
{
	bool r;

	pthread_mutex_lock(&n->mu);
	r = n->open_count > 0 && !n->is_dir && !n->unlinked;
	pthread_mutex_unlock(&n->mu);
	return r;
}

/* ---- operations ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mount_ctx *m = userdata;

	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->time_gran = 1;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (m->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* O_TRUNC comes as a setattr before open; handle-kill-priv stays the kernel's */
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
}

/*
 * Whether name in parent cannot exist: parent is a directory this mount made
 * and knows every name of (itable_known_absent), its entry is fresh, and the
 * event follower is connected (another client's new name there drops that).
 */
static bool known_absent(struct mount_ctx *m, fuse_ino_t parent, const char *name)
{
	struct inode *pn;
	bool fresh = false;

	if (!atomic_load(&m->following))
		return false;
	pn = itable_get(m->it, parent);
	if (!pn)
		return false;
	pthread_mutex_lock(&pn->mu);
	fresh = pn->cached && cache_fresh(m, pn);
	pthread_mutex_unlock(&pn->mu);
	itable_put(m->it, pn);
	return fresh && itable_known_absent(m->it, parent, name);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct filer_entry *e = NULL;
	struct inode *n;
	char *path;
	int rc;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	path = child_path(req, parent, name);
	if (!path)
		return;
	/* a name this mount knows, with an entry still fresh: no round trip */
	n = itable_get_name(m->it, parent, name);
	if (n) {
		pthread_mutex_lock(&n->mu);
		if (n->cached && cache_fresh(m, n))
			e = itable_cached_entry(n);
		pthread_mutex_unlock(&n->mu);
		if (e && itable_ref(m->it, n->ino)) {
			struct fuse_entry_param ep = {.ino = n->ino,
						      .generation = 1,
						      .attr_timeout = m->attr_timeout,
						      .entry_timeout = m->entry_timeout};
			entry_stat(n, e, &ep.attr);
			if (fuse_reply_entry(req, &ep))
				itable_forget(m->it, n->ino, 1);
			itable_put(m->it, n);
			filer_entry_free(e);
			free(path);
			return;
		}
		itable_put(m->it, n);
		filer_entry_free(e);
		e = NULL;
		rc = filer_meta_lookup(m->rpc, path, &e);
	} else if (known_absent(m, parent, name)) {
		rc = ENOENT; /* e.g. the lookup before every create: no round trip */
	} else {
		rc = filer_meta_lookup(m->rpc, path, &e);
	}
	free(path);
	if (rc == ENOENT || rc == ENOTDIR) {
		/* a negative entry the kernel may cache (the follower invalidates it) */
		struct fuse_entry_param ep = {.entry_timeout = m->entry_timeout};
		if (rc == ENOTDIR)
			fuse_reply_err(req, ENOTDIR);
		else
			fuse_reply_entry(req, &ep);
		return;
	}
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	reply_entry(req, parent, name, e);
	filer_entry_free(e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	itable_forget(ctx(req)->it, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct mount_ctx *m = ctx(req);

	for (size_t i = 0; i < count; i++)
		itable_forget(m->it, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	struct stat st;
	bool removed;
	int rc;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&n->mu);
	removed = n->removed;
	pthread_mutex_unlock(&n->mu);
	/* a removed node (still open) has no path: its last entry, with nlink 0 */
	rc = node_entry(m, n, removed, &e);
	if (rc) {
		fuse_reply_err(req, rc);
	} else {
		entry_stat(n, e, &st);
		fuse_reply_attr(req, &st, m->attr_timeout);
	}
	filer_entry_free(e);
	itable_put(m->it, n);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_meta_set s = {0};
	struct filer_entry *e = NULL;
	file_data *fd = NULL;
	struct stat st;
	int rc = 0;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		s.set |= FM_SET_MODE;
		s.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		s.set |= FM_SET_UID;
		s.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		s.set |= FM_SET_GID;
		s.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		s.set |= FM_SET_MTIME;
		s.mtime_ns = now_ns();
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		s.set |= FM_SET_MTIME;
		s.mtime_ns = ts_to_ns(&attr->st_mtim);
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		s.set |= FM_SET_CTIME;
		s.ctime_ns = ts_to_ns(&attr->st_ctim);
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) {
		/* stored apart from the mtime: UTIME_OMIT of the other keeps it */
		s.set |= FM_SET_ATIME;
		s.atime_ns =
			(to_set & FUSE_SET_ATTR_ATIME_NOW) ? now_ns() : ts_to_ns(&attr->st_atim);
		pthread_mutex_lock(&n->mu);
		n->atime_pending_ns = 0; /* an explicit atime wins over a read's */
		pthread_mutex_unlock(&n->mu);
		if (!(s.set & FM_SET_CTIME)) {
			s.set |= FM_SET_CTIME; /* changing atime changes ctime */
			s.ctime_ns = now_ns();
		}
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (n->is_dir) {
			rc = EISDIR;
			goto out;
		}
		if (attr->st_size < 0) {
			rc = EINVAL;
			goto out;
		}
		pthread_mutex_lock(&n->commit_mu);
		pthread_mutex_lock(&n->mu);
		fd = n->fd;
		if (fd) {
			rc = file_data_truncate(fd, (uint64_t)attr->st_size);
			n->data_mtime_ns = now_ns();
		}
		pthread_mutex_unlock(&n->mu);
		pthread_mutex_unlock(&n->commit_mu);
		if (rc)
			goto out;
		if (!fd) {
			s.set |= FM_SET_SIZE;
			s.size = (uint64_t)attr->st_size;
		}
		if (!(s.set & FM_SET_MTIME)) {
			s.set |= FM_SET_MTIME;
			s.mtime_ns = now_ns();
		}
	}
	if (!fd && (s.set & FM_SET_MTIME)) {
		/* an explicit mtime must outlive data still buffered (tar sets it before
		   close): commit both now, or the commit at close would stamp the write time */
		pthread_mutex_lock(&n->mu);
		fd = n->fd;
		pthread_mutex_unlock(&n->mu);
	}
	if (fd) {
		rc = commit_node(m, n, &s, &e);
	} else if (s.set) {
		char *path = itable_path(m->it, ino);
		if (!(s.set & FM_SET_CTIME)) {
			s.set |= FM_SET_CTIME;
			s.ctime_ns = now_ns();
		}
		/* an explicit mtime wins over a pending directory touch (touch_send) */
		pthread_mutex_lock(&n->commit_mu);
		if (s.set & FM_SET_MTIME) {
			pthread_mutex_lock(&n->mu);
			n->touch_pending_ns = 0;
			pthread_mutex_unlock(&n->mu);
		}
		if (path)
			mount_note_own(m, path, s.ctime_ns);
		rc = path ? filer_meta_update(m->rpc, path, &s, &e) : ENOENT;
		pthread_mutex_unlock(&n->commit_mu);
		free(path);
		if (!rc)
			itable_cache(n, e, m->follow_cache_ns);
	}
	if (!rc && (to_set & FUSE_SET_ATTR_SIZE) && attr->st_size > 0) {
		clip_after_shrink(m, n, (uint64_t)attr->st_size);
		filer_entry_free(e);
		e = NULL;
	}
	if (!rc && !e)
		rc = node_entry(m, n, false, &e);
out:
	if (rc) {
		fuse_reply_err(req, rc);
	} else {
		entry_stat(n, e, &st);
		fuse_reply_attr(req, &st, m->attr_timeout);
	}
	filer_entry_free(e);
	itable_put(m->it, n);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	int rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = node_entry(m, n, true, &e);
	if (rc)
		fuse_reply_err(req, rc);
	else if (!S_ISLNK(e->attr.mode) || !e->attr.symlink_target)
		fuse_reply_err(req, EINVAL);
	else
		fuse_reply_readlink(req, e->attr.symlink_target);
	filer_entry_free(e);
	itable_put(m->it, n);
}

/* Whether the caller is in group gid. */
static bool in_group(fuse_req_t req, gid_t gid)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t groups[64];
	int n;

	if (c->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 64, groups);
	for (int i = 0; i < n && i < 64; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* Creates a new entry named name in parent and replies with it (or the error). */
/*
 * The common start of every create: refuses the hidden trash name, builds the
 * new child's path (NULL after replying an error) and applies the set-group-ID
 * rules of the parent directory to nw (group inherited, a subdirectory keeps the
 * bit, a file's bit dropped when its creator is not in the group). The caller
 * frees the path.
 */
static char *new_child(fuse_req_t req, fuse_ino_t parent, const char *name,
		       struct filer_meta_new *nw)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct filer_entry *pe = NULL;
	struct inode *pn;
	char *path;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, EEXIST);
		return NULL;
	}
	path = child_path(req, parent, name);
	if (!path)
		return NULL;
	pn = itable_get(m->it, parent);
	if (pn && !node_entry(m, pn, true, &pe) && (pe->attr.mode & S_ISGID)) {
		nw->gid = pe->attr.gid;
		if (S_ISDIR(nw->mode))
			nw->mode |= S_ISGID;
	}
	itable_put(m->it, pn);
	filer_entry_free(pe);
	if (!S_ISDIR(nw->mode) && (nw->mode & S_ISGID) && c->uid != 0 && !in_group(req, nw->gid))
		nw->mode &= ~(mode_t)S_ISGID;
	nw->time_ns = now_ns();
	mount_note_own(m, path, nw->time_ns);
	return path;
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
		      const char *target)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct filer_meta_new nw = {.mode = mode,
				    .uid = c->uid,
				    .gid = c->gid,
				    .rdev = rdev,
				    .symlink_target = target,
				    .exclusive = true};
	struct filer_entry *e = NULL;
	char *path = new_child(req, parent, name, &nw);
	int rc;

	if (!path)
		return;
	rc = filer_meta_create(m->rpc, path, &nw, &e);
	free(path);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	touch_dir(m, parent);
	if (S_ISDIR(mode) && atomic_load(&m->following)) {
		/* new and empty: every name it gets from now on passes through the
		 * table or comes as an event (which clears this) */
		struct fuse_entry_param ep;
		struct inode *n;
		if (!learn(m, parent, name, e, &ep)) {
			n = itable_get(m->it, ep.ino);
			if (n)
				atomic_store(&n->dir_complete, true);
			itable_put(m->it, n);
			if (fuse_reply_entry(req, &ep))
				itable_forget(m->it, ep.ino, 1);
			filer_entry_free(e);
			return;
		}
	}
	reply_entry(req, parent, name, e);
	filer_entry_free(e);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	case 0:
		mode |= S_IFREG;
		break;
	default:
		fuse_reply_err(req, EINVAL);
		return;
	}
	make_node(req, parent, name, mode,
		  (mode & S_IFMT) == S_IFCHR || (mode & S_IFMT) == S_IFBLK ? rdev : 0, NULL);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	if (strlen(link) >= FILER_PATH_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	make_node(req, parent, name, S_IFLNK | 0777, 0, link);
}

/*
 * After unlink or rmdir: a node (may be NULL) left without any name (not
 * hidden for an open file) reports nlink 0 to fstat on a handle still open,
 * from the entry it last had.
 */
static void mark_removed(struct mount_ctx *m, struct inode *n)
{
	char *path;

	if (!n)
		return;
	path = itable_path(m->it, n->ino);
	if (!path) {
		pthread_mutex_lock(&n->mu);
		if (!n->unlinked)
			n->removed = true;
		pthread_mutex_unlock(&n->mu);
	}
	free(path);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n;
	char *path;
	int rc = -1;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	path = child_path(req, parent, name);
	if (!path)
		return;
	n = itable_get_name(m->it, parent, name);
	if (n && open_file(n))
		rc = hide_open_file(m, n, parent, name, path);
	if (rc) {
		mount_note_own(m, path, MOUNT_OWN_GONE);
		rc = filer_meta_delete(m->rpc, path, false);
	}
	if (!rc) {
		itable_unlink(m->it, parent, name);
		if (n)
			itable_uncache(n);
		mark_removed(m, n);
		touch_dir(m, parent);
	}
	itable_put(m->it, n);
	free(path);
	fuse_reply_err(req, rc);
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct filer_meta_page pg;
	char *path;
	int rc;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	path = child_path(req, parent, name);
	if (!path)
		return;
	/* the filer's delete takes files too: make sure it is an (empty) directory */
	rc = filer_meta_list(m->rpc, path, "", 1, &pg);
	if (!rc && pg.n)
		rc = ENOTEMPTY;
	filer_meta_page_free(&pg);
	if (!rc) {
		mount_note_own(m, path, MOUNT_OWN_GONE);
		rc = filer_meta_delete(m->rpc, path, false);
	}
	if (!rc) {
		struct inode *n = itable_get_name(m->it, parent, name);
		itable_unlink(m->it, parent, name);
		mark_removed(m, n);
		itable_put(m->it, n);
		touch_dir(m, parent);
	}
	free(path);
	fuse_reply_err(req, rc);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	struct mount_ctx *m = ctx(req);
	bool noreplace = flags & RENAME_NOREPLACE, exchange = flags & RENAME_EXCHANGE;
	struct inode *a = NULL, *b = NULL;
	char *from = NULL, *to = NULL;
	int rc;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (is_trash(parent, name) || is_trash(newparent, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	from = child_path(req, parent, name);
	if (!from)
		return;
	to = child_path(req, newparent, newname);
	if (!to)
		goto out_nr;
	a = itable_get_name(m->it, parent, name);
	b = itable_get_name(m->it, newparent, newname);
	/* an open file replaced by the rename keeps its data until closed */
	if (!exchange && !noreplace && b && b != a && open_file(b)) {
		if (hide_open_file(m, b, newparent, newname, to) == 0) {
			itable_put(m->it, b);
			b = NULL;
		}
	}
	/* the events this rename causes are the mount's own */
	mount_note_own(m, from, MOUNT_OWN_GONE);
	mount_note_own(m, to, MOUNT_OWN_MOVED);
	if (exchange) {
		mount_note_own(m, to, MOUNT_OWN_GONE);
		mount_note_own(m, from, MOUNT_OWN_MOVED);
	} else if (b) {
		mount_note_own(m, to, MOUNT_OWN_GONE); /* the replaced target */
	}
	rc = filer_meta_rename(m->rpc, from, to, noreplace, exchange);
	if (!rc) {
		itable_rename(m->it, parent, name, newparent, newname, exchange);
		/* rename changes the moved entries' ctime (as ext4 does) */
		touch_ctime(m, a, to);
		if (exchange)
			touch_ctime(m, b, from);
		else if (b)
			itable_uncache(b);
		touch_dir(m, parent);
		if (newparent != parent)
			touch_dir(m, newparent);
	}
	fuse_reply_err(req, rc);
	goto out;
out_nr:;
out:
	itable_put(m->it, a);
	itable_put(m->it, b);
	free(from);
	free(to);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mount_ctx *m = ctx(req);
	struct filer_entry *e = NULL;
	struct inode *n;
	char *target, *to;
	int rc;

	if (is_trash(newparent, newname)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	to = child_path(req, newparent, newname);
	if (!to)
		return;
	target = itable_path(m->it, ino);
	rc = target ? filer_meta_link(m->rpc, target, to, &e) : ENOENT;
	free(target);
	free(to);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	if (e->attr.hard_link_id_len)
		itable_set_hardlink(m->it, ino, e->attr.hard_link_id, e->attr.hard_link_id_len);
	n = itable_get(m->it, ino);
	if (n)
		itable_cache(n, e, m->follow_cache_ns);
	itable_put(m->it, n);
	touch_dir(m, newparent);
	reply_entry(req, newparent, newname, e);
	filer_entry_free(e);
}

static void note_access(struct mount_ctx *m, struct inode *n);

/*
 * Attaches n's file data for a new handle (a fresh lookup first: close-to-open).
 * *keep: whether the kernel may keep its pages of the file, because they hold
 * the data of the entry just looked up (its data signature is the one the
 * pages were read under, or the open file's own view while it has dirty data).
 */
static int attach_data(struct mount_ctx *m, struct inode *n, const struct filer_entry *fresh,
		       bool *keep)
{
	struct filer_entry *e = NULL;
	bool need_lookup;
	int rc = 0;

	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	need_lookup = !fresh && (!n->fd || !file_data_dirty(n->fd));
	pthread_mutex_unlock(&n->mu);
	if (need_lookup) {
		char *path = itable_path(m->it, n->ino);
		rc = path ? filer_meta_lookup(m->rpc, path, &e) : ENOENT;
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

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	bool keep = false;
	struct fh *h;
	int rc;

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
		fuse_reply_err(req, rc);
		return;
	}
	/* reads the kernel's pages serve never reach the mount: the open counts as the
	 * access (relatime) */
	if (keep && (fi->flags & O_ACCMODE) != O_WRONLY)
		note_access(m, n);
	h = fh_new(m, n, fi->flags);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = keep;
	if (fuse_reply_open(req, fi)) {
		/* the kernel will not release it */
		pthread_mutex_lock(&n->mu);
		n->open_count--;
		pthread_mutex_unlock(&n->mu);
		itable_put(m->it, n);
		fh_free(m, h);
	}
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
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
	char *path = new_child(req, parent, name, &nw);
	int rc;

	if (!path)
		return;
	rc = filer_meta_create(m->rpc, path, &nw, &e);
	if (rc == EEXIST && !(fi->flags & O_EXCL)) {
		/* lost a race with another creator: open what is there */
		rc = filer_meta_lookup(m->rpc, path, &e);
		if (!rc && S_ISDIR(e->attr.mode))
			rc = EISDIR;
		if (!rc && (fi->flags & O_TRUNC) && e->attr.size) {
			struct filer_meta_set s = {.set = FM_SET_SIZE | FM_SET_MTIME,
						   .mtime_ns = now_ns()};
			filer_entry_free(e);
			e = NULL;
			rc = filer_meta_update(m->rpc, path, &s, &e);
		}
	} else if (!rc) {
		touch_dir(m, parent);
	}
	free(path);
	if (rc)
		goto fail;
	rc = learn(m, parent, name, e, &ep);
	if (rc)
		goto fail;
	n = itable_get(m->it, ep.ino);
	rc = attach_data(m, n, e, &keep);
	if (rc) {
		itable_forget(m->it, ep.ino, 1);
		goto fail;
	}
	h = fh_new(m, n, fi->flags);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = keep;
	if (fuse_reply_create(req, &ep, fi)) {
		pthread_mutex_lock(&n->mu);
		n->open_count--;
		pthread_mutex_unlock(&n->mu);
		itable_forget(m->it, ep.ino, 1);
		itable_put(m->it, n);
		fh_free(m, h);
	}
	filer_entry_free(e);
	return;
fail:
	itable_put(m->it, n);
	filer_entry_free(e);
	fuse_reply_err(req, rc);
}

#define RELATIME_MAX_AGE_NS (24 * 3600 * 1000000000ll)

/*
 * relatime after a read of n: a new atime when the current one is not after
 * the mtime or ctime, or is a day old. Kept on the node (stat shows it at
 * once) and stored with the next commit (flush, close), so a read costs no
 * round trip. Nothing with -o noatime.
 */
static void note_access(struct mount_ctx *m, struct inode *n)
{
	int64_t now = now_ns(), at, mt, ct;

	if (m->noatime)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->cached) {
		const struct inode_attr *a = &n->attr;
		at = n->atime_pending_ns ? n->atime_pending_ns
		     : a->atime_ns       ? a->atime_ns
					 : a->mtime_ns;
		mt = n->data_mtime_ns ? n->data_mtime_ns : a->mtime_ns;
		ct = n->data_mtime_ns > a->ctime_ns ? n->data_mtime_ns : a->ctime_ns;
		if (at <= mt || at <= ct || now - at > RELATIME_MAX_AGE_NS)
			n->atime_pending_ns = now;
	}
	pthread_mutex_unlock(&n->mu);
}

static struct fh *get_fh(struct fuse_file_info *fi) { return (struct fh *)(uintptr_t)fi->fh; }

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fh *h = get_fh(fi);
	size_t got = 0;
	char *b;
	int rc;

	(void)ino;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	b = xmalloc(size ? size : 1);
	rc = file_data_read(h->node->fd, (uint64_t)off, size, b, &got);
	if (!rc)
		note_access(ctx(req), h->node);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_buf(req, b, got);
	free(b);
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
	pthread_mutex_unlock(&n->mu);
	if ((mode & (S_ISGID | S_IXGRP)) != S_ISGID || fuse_req_ctx(req)->uid == 0 ||
	    in_group(req, gid))
		return;
	path = itable_path(m->it, n->ino);
	if (!path)
		return;
	s.mode = mode & 07777 & ~(uint32_t)S_ISGID;
	s.ctime_ns = now_ns();
	mount_note_own(m, path, s.ctime_ns);
	if (!filer_meta_update(m->rpc, path, &s, &e))
		itable_cache(n, e, m->follow_cache_ns);
	filer_entry_free(e);
	free(path);
	if (m->se)
		fuse_lowlevel_notify_inval_inode(m->se, n->ino, -1, 0);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fh *h = get_fh(fi);
	struct inode *n = h->node;
	uint64_t at = (uint64_t)off;
	int rc;

	(void)ino;
	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* O_APPEND: the end as this mount knows it now, not the kernel's cached size */
	if ((h->flags & O_APPEND) && !ctx(req)->writeback_cache)
		at = file_data_size(n->fd);
	rc = file_data_write(n->fd, at, data, size);
	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	pthread_mutex_lock(&n->mu);
	n->data_mtime_ns = now_ns();
	pthread_mutex_unlock(&n->mu);
	drop_sgid_on_write(req, n);
	fuse_reply_write(req, size);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	fuse_locks_flush(ctx(req), ino, fi->lock_owner); /* close drops the owner's locks */
	fuse_reply_err(req, commit_node(ctx(req), get_fh(fi)->node, NULL, NULL));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	fuse_reply_err(req, commit_node(ctx(req), get_fh(fi)->node, NULL, NULL));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct fh *h = get_fh(fi);
	struct inode *n = h->node;
	char *hidden = NULL;
	int rc;

	if (fi->flock_release)
		fuse_locks_release(m, ino, fi->lock_owner);
	rc = commit_node(m, n, NULL, NULL);
	if (rc)
		log_error("ino %llu: data not committed at close: %s", (unsigned long long)n->ino,
			  strerror(rc));
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
		uint64_t tino = trash_ino(m);
		char *path = tino ? itable_child_path(m->it, tino, hidden) : NULL;
		if (path) {
			itable_unlink(m->it, tino, hidden);
			filer_meta_delete(m->rpc, path, false);
		}
		free(path);
		free(hidden);
	}
	itable_put(m->it, n);
	fh_free(m, h);
	fuse_reply_err(req, 0);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct fh *h = get_fh(fi);
	int rc = 0;

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
		pthread_mutex_lock(&h->node->mu);
		h->node->data_mtime_ns = now_ns();
		pthread_mutex_unlock(&h->node->mu);
		rc = commit_node(ctx(req), h->node, NULL, NULL);
	}
	fuse_reply_err(req, rc);
}

static void op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	uint64_t pos = 0;
	int rc;

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
		fuse_reply_err(req, rc);
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
static void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags)
{
	struct fh *hi = get_fh(fi_in), *ho = get_fh(fi_out);
	file_data *src = hi->node->fd, *dst = ho->node->fd;
	uint64_t size, done = 0;
	uint8_t *b = NULL;
	int rc = 0;

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
		note_access(ctx(req), hi->node);
		pthread_mutex_lock(&ho->node->mu);
		ho->node->data_mtime_ns = now_ns();
		pthread_mutex_unlock(&ho->node->mu);
		drop_sgid_on_write(req, ho->node);
		fuse_reply_write(req, (size_t)done); /* an error after some bytes: a short copy */
	} else if (rc) {
		fuse_reply_err(req, rc);
	} else {
		fuse_reply_write(req, 0);
	}
}

/* ---- directories ---- */

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = xcalloc(1, sizeof(*d));

	pthread_mutex_init(&d->mu, NULL);
	d->ino = ino;
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi)) {
		pthread_mutex_destroy(&d->mu);
		free(d);
	}
}

/* Makes d->page hold index i (without . and ..). Returns errno, or -1 past the end. */
static int dir_seek(struct mount_ctx *m, struct dirh *d, const char *path, uint64_t i)
{
	int rc;

	if (d->fetched && i < d->page_base) {
		filer_meta_page_free(&d->page);
		d->fetched = false;
	}
	while (!d->fetched || i >= d->page_base + d->page.n) {
		struct filer_meta_page next;
		const char *start = "";
		if (d->fetched) {
			if (!d->page.more || !d->page.last_name)
				return -1;
			start = d->page.last_name;
		}
		rc = filer_meta_list(m->rpc, path, start, LIST_PAGE, &next);
		if (rc)
			return rc;
		if (d->fetched)
			d->page_base += d->page.n;
		else
			d->page_base = 0;
		filer_meta_page_free(&d->page);
		d->page = next;
		d->fetched = true;
		if (!d->page.n)
			return -1;
	}
	return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct mount_ctx *m = ctx(req);
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *out = xmalloc(size), *path = NULL;
	size_t pos = 0;
	uint64_t idx = off < 0 ? 0 : (uint64_t)off;
	int rc = 0;

	pthread_mutex_lock(&d->mu);
	path = itable_path(m->it, ino);
	if (!path) {
		rc = ENOENT;
		goto out;
	}
	for (;; idx++) {
		struct fuse_entry_param ep;
		struct stat st;
		const char *name;
		size_t need;

		memset(&ep, 0, sizeof(ep));
		memset(&st, 0, sizeof(st));
		if (idx < 2) {
			name = idx == 0 ? "." : "..";
			st.st_ino = idx == 0 ? ino : itable_parent(m->it, ino);
			st.st_mode = S_IFDIR;
			ep.attr = st;
			need = plus ? fuse_add_direntry_plus(req, NULL, 0, name, &ep, 0)
				    : fuse_add_direntry(req, NULL, 0, name, &st, 0);
			if (pos + need > size)
				break;
			pos += plus ? fuse_add_direntry_plus(req, out + pos, size - pos, name, &ep,
							     (off_t)idx + 1)
				    : fuse_add_direntry(req, out + pos, size - pos, name, &st,
							(off_t)idx + 1);
			continue;
		}
		rc = dir_seek(m, d, path, idx - 2);
		if (rc < 0) {
			rc = 0;
			break;
		}
		if (rc)
			break;
		const struct filer_entry *e = d->page.entries[idx - 2 - d->page_base];
		name = e->name;
		if (is_trash(ino, name))
			continue;
		st.st_mode = e->attr.mode;
		if (plus) {
			/* measure first: an entry that does not fit must not take a reference */
			ep.attr = st;
			ep.ino = 1;
			need = fuse_add_direntry_plus(req, NULL, 0, name, &ep, 0);
			if (pos + need > size)
				break;
			rc = learn(m, ino, name, e, &ep);
			if (rc) {
				rc = 0;
				continue;
			}
			pos += fuse_add_direntry_plus(req, out + pos, size - pos, name, &ep,
						      (off_t)idx + 1);
		} else {
			struct inode *n = itable_get_name(m->it, ino, name);
			st.st_ino = n ? n->ino : ((uint64_t)1 << 62) + idx;
			itable_put(m->it, n);
			need = fuse_add_direntry(req, NULL, 0, name, &st, 0);
			if (pos + need > size)
				break;
			pos += fuse_add_direntry(req, out + pos, size - pos, name, &st,
						 (off_t)idx + 1);
		}
	}
out:
	pthread_mutex_unlock(&d->mu);
	free(path);
	/* entries already added were learned: send them even after a later error */
	if (rc && pos == 0)
		fuse_reply_err(req, rc);
	else
		fuse_reply_buf(req, out, pos);
	free(out);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;

	(void)ino;
	filer_meta_page_free(&d->page);
	pthread_mutex_destroy(&d->mu);
	free(d);
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	/* every namespace change is durable in the filer when its call returns */
	fuse_reply_err(req, 0);
}

/*
 * The filer's statfs op: *total, *free bytes and *files in use. Returns errno
 * (ENOSYS from a filer without it).
 */
static int filer_statfs(struct mount_ctx *m, uint64_t *total, uint64_t *free_b, uint64_t *files)
{
	yajl_val tree;
	char msg[128];
	buf resp;
	int rc;

	buf_init(&resp);
	rc = filer_rpc_call(m->rpc, "statfs", "{}", 2, &resp);
	if (rc)
		goto out;
	tree = json_parse(resp.data ? resp.data : "", resp.len, msg, sizeof(msg));
	if (!tree || !json_get_u64(tree, "totalBytes", total) ||
	    !json_get_u64(tree, "freeBytes", free_b) || !json_get_u64(tree, "files", files))
		rc = EIO;
	if (!rc && *free_b > *total)
		*free_b = *total;
	yajl_tree_free(tree);
out:
	buf_free(&resp);
	return rc;
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	uint64_t total, free_b, files;
	struct statvfs s;
	const uint64_t bs = 1 << 20;

	(void)ino;
	memset(&s, 0, sizeof(s));
	s.f_bsize = bs;
	s.f_frsize = bs;
	s.f_namemax = FILER_NAME_MAX;
	s.f_files = 1ull << 40;
	if (!filer_statfs(ctx(req), &total, &free_b, &files)) {
		/* the cluster's volumes (docs/mount.md) */
		s.f_blocks = total / bs;
		s.f_bfree = s.f_bavail = free_b / bs;
		s.f_ffree = s.f_favail = files < s.f_files ? s.f_files - files : 0;
	} else {
		/*
		 * A filer without the statfs op: report a fixed 1 PiB with all of
		 * it free, so tools that check free space before writing go ahead.
		 */
		s.f_blocks = 1ull << 30;
		s.f_bfree = s.f_bavail = 1ull << 30;
		s.f_ffree = s.f_favail = 1ull << 40;
	}
	fuse_reply_statfs(req, &s);
}

/* ---- extended attributes ---- */

/* The namespaces a local file system stores (system.* ones are the kernel's). */
static bool xattr_namespace_ok(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n;
	char *path;
	int rc;

	if (strlen(name) > FILER_SHORT_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if (!xattr_namespace_ok(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if ((flags & XATTR_CREATE) && (flags & XATTR_REPLACE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	path = itable_path(m->it, ino);
	rc = path ? filer_meta_set_xattr(m->rpc, path, name, value, size,
					 (flags & XATTR_CREATE)    ? FM_XATTR_CREATE
					 : (flags & XATTR_REPLACE) ? FM_XATTR_REPLACE
								   : FM_XATTR_ANY)
		  : ENOENT;
	free(path);
	n = itable_get(m->it, ino);
	if (n)
		itable_uncache(n);
	itable_put(m->it, n);
	fuse_reply_err(req, rc);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	const struct filer_xattr *x;
	struct filer_entry *e = NULL;
	int rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!xattr_namespace_ok(name)) {
		itable_put(m->it, n);
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	rc = node_entry(m, n, false, &e);
	if (rc) {
		fuse_reply_err(req, rc);
	} else if (!(x = filer_entry_xattr_get(e, name))) {
		fuse_reply_err(req, ENODATA);
	} else if (!size) {
		fuse_reply_xattr(req, x->value_len);
	} else if (x->value_len > size) {
		fuse_reply_err(req, ERANGE);
	} else {
		fuse_reply_buf(req, (const char *)x->value, x->value_len);
	}
	filer_entry_free(e);
	itable_put(m->it, n);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	buf b;
	int rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	buf_init(&b);
	rc = node_entry(m, n, false, &e);
	if (!rc) {
		/* trusted.* is listed for privileged callers only (as the kernel's own xattr
		 * handlers do) */
		bool privileged = fuse_req_ctx(req)->uid == 0;
		for (size_t i = 0; i < e->n_xattrs; i++) {
			const char *xn = e->xattrs[i].name;
			if (!privileged && !strncmp(xn, "trusted.", 8))
				continue;
			buf_append(&b, xn, strlen(xn) + 1);
		}
	}
	if (rc)
		fuse_reply_err(req, rc);
	else if (!size)
		fuse_reply_xattr(req, b.len);
	else if (b.len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, b.data, b.len);
	buf_free(&b);
	filer_entry_free(e);
	itable_put(m->it, n);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n;
	char *path = itable_path(m->it, ino);
	int rc = path ? filer_meta_remove_xattr(m->rpc, path, name) : ENOENT;

	free(path);
	n = itable_get(m->it, ino);
	if (n)
		itable_uncache(n);
	itable_put(m->it, n);
	fuse_reply_err(req, rc);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	int rc;

	/* only reached without default_permissions: the mode bits, as the kernel would */
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = node_entry(m, n, false, &e);
	if (!rc && mask != F_OK && c->uid != 0) {
		unsigned bits = e->attr.mode;
		unsigned have = c->uid == e->attr.uid        ? (bits >> 6) & 7
				: in_group(req, e->attr.gid) ? (bits >> 3) & 7
							     : bits & 7;
		if ((unsigned)mask & ~have)
			rc = EACCES;
	}
	fuse_reply_err(req, rc);
	filer_entry_free(e);
	itable_put(m->it, n);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.access = op_access,
	.create = op_create,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
	.copy_file_range = op_copy_file_range,
	.getlk = fuse_locks_getlk,
	.setlk = fuse_locks_setlk,
	.flock = fuse_locks_flock,
};

const struct fuse_lowlevel_ops *fuse_ops_table(void) { return &ops; }

struct flush_all {
	struct inode **v;
	size_t n, cap;
};

static void collect_open(struct inode *n, void *arg)
{
	struct flush_all *f = arg;

	if (!n->fd)
		return;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->v = xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n++] = n;
}

int fuse_ops_flush_all(struct mount_ctx *m)
{
	struct flush_all f = {0};
	int failed = 0;

	/* the loop has stopped: no operation runs and no node goes away */
	itable_foreach(m->it, collect_open, &f);
	for (size_t i = 0; i < f.n; i++) {
		int rc = commit_node(m, f.v[i], NULL, NULL);
		if (rc) {
			log_error("ino %llu: dirty data lost at unmount: %s",
				  (unsigned long long)f.v[i]->ino, strerror(rc));
			failed++;
		}
	}
	free(f.v);
	return failed;
}

void fuse_ops_drop_all(struct mount_ctx *m)
{
	struct flush_all f = {0};

	while (m->handles) {
		struct fh *h = m->handles;
		itable_put(m->it, h->node);
		fh_free(m, h);
	}

	itable_foreach(m->it, collect_open, &f);
	for (size_t i = 0; i < f.n; i++) {
		file_data_free(f.v[i]->fd);
		f.v[i]->fd = NULL;
	}
	free(f.v);
}
