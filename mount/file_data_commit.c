/*
 * Flush and commit of a file's data (file_data.h: file_data_flush and its
 * companions, file_data_commit_result): the chunk list a commit sends to the
 * filer, and what the commit's outcome does to the file.
 *
 * DESIGN
 * - A flush uploads each range not uploaded at its current generation
 *   (reusing an upload of the same generation) and remembers the
 *   generations; committed(ok) drops only the ranges still at them, so writes
 *   that arrived during the flush stay dirty. While a flush awaits its
 *   commit, truncates, punches and other flushes wait (file_data_wait_quiet).
 * - A commit with appendChunks + size cannot express a shrink followed by
 *   growth (the filer would show the old bytes again), nor add chunks to an
 *   entry with inline content: those commits replace the whole list instead
 *   (file_data_flush_replaces). A replacing flush turns inline content into
 *   the oldest chunk of the list.
 * - Small files: a file whose whole data fits inline_max and is known here
 *   (no bytes only in base chunks) commits as update {content}: no upload.
 * - A chunk handed out by a flush whose commit failed ambiguously (WFS_EIO,
 *   WFS_EUNAVAIL, WFS_EPRECOND: it may have committed) is remembered in the
 *   file's `sent` list and never freed by the mount (a leak, not a loss); a
 *   committed chunk is never in a range or the pending list afterwards, so it
 *   is never freed.
 * - fsync (file_data_flush_sync) uploads with fsync=true, so those chunks are
 *   durable on every replica before the commit; chunks uploaded earlier
 *   without it are synced by volume (file_data_sync_volumes, file_data.c).
 * - The kept tail (file_data_write.c): a successful commit keeps a small last
 *   range's buffer as the tail; the chunks the flushed data supersedes (the
 *   revived tails) leave the list (update dropChunks, or left out of a
 *   replaced list).
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "mount/file_data_int.h"
#include "util.h"

#define TAIL_MAX (64u << 10) /* committed tails up to this are kept to merge */

bool file_data_flush_replaces(file_data *fd)
{
	bool r;
	pthread_mutex_lock(&fd->mu);
	r = fd->flushing && fd->fl_replace;
	pthread_mutex_unlock(&fd->mu);
	return r;
}

/* file_data_flush; with fsync, every upload asks for fsync=true. */
static wfs_err flush(file_data *fd, bool fsync, struct filer_chunk **chunks, size_t *n)
{
	struct flush_wait fw = {.fsync = fsync};
	struct chunk_list out = {0};
	bool replace;
	wfs_err e = WFS_OK;

	*chunks = NULL;
	*n = 0;
	pthread_mutex_lock(&fd->mu);
	file_data_wait_quiet(fd);
	fd->bg_err = WFS_OK;
	replace = fd->filer_inline && (fd->nslots || fd->pend.n);
	replace |= fd->trunc_min < fd->base_size && fd->trunc_min < fd->size;
	replace |= fd->holes_dirty;
	if (replace) {
		e = file_data_base_resolve(fd);
		if (e)
			goto out;
	}
	if (fd->has_inl && replace && fd->inl_len) {
		/* the inline bytes become the oldest chunk of the new list */
		size_t l = fd->inl_len;
		uint8_t *copy = xmalloc(l);
		char *fid = NULL, etag[BLOB_ETAG_MAX] = "";
		struct filer_chunk key = {0};
		memcpy(copy, fd->inl, l);
		fd->jobs++; /* keeps truncates and other flushes out while unlocked */
		pthread_mutex_unlock(&fd->mu);
		e = mount_data_upload(fd->md, copy, l, fsync, &fid, etag, &key);
		free(copy);
		pthread_mutex_lock(&fd->mu);
		if (!e && !fsync)
			file_data_note_unsynced(fd, fid);
		fd->jobs--;
		pthread_cond_broadcast(&fd->cond);
		if (e)
			goto out;
		struct filer_chunk c = {.fid = fid,
					.offset = 0,
					.size = l,
					.mtime_ns = 1,
					.etag = *etag ? etag : NULL};
		filer_chunk_copy_key(&c, &key);
		/* oldest: first in the pending list, so later ones win even on equal mtime */
		struct chunk_list np = {0};
		chunk_list_push(&np, &c);
		for (size_t i = 0; i < fd->pend.n; i++)
			chunk_list_push(&np, &fd->pend.c[i]);
		chunk_list_clear(&fd->pend);
		fd->pend = np;
		free(fid);
		free(fd->inl);
		fd->inl = NULL;
		fd->inl_len = 0;
		fd->has_inl = false;
		file_data_changed(fd);
	} else if (fd->has_inl && replace) {
		fd->has_inl = false;
	}
	/* background uploads started while the inline bytes went out would race ours */
	while (fd->jobs)
		pthread_cond_wait(&fd->cond, &fd->mu);
	/* upload every range not uploaded at its current generation; the last one in this
	   thread (an fsync of one small write then costs no thread hand-off) */
	{
		struct slot *ls = NULL;
		size_t lk = 0;
		for (size_t i = 0; i < fd->nslots; i++) {
			struct slot *s = fd->slots[i];
			for (size_t k = 0; k < s->n; k++) {
				if (s->r[k].up_gen == s->r[k].gen)
					continue;
				if (ls)
					file_data_upload_start(fd, ls, lk, &fw, true);
				fw.remaining++;
				ls = s;
				lk = k;
			}
		}
		if (ls) {
			struct up_job *j = file_data_upload_start(fd, ls, lk, &fw, false);
			pthread_mutex_unlock(&fd->mu);
			file_data_upload_run(j);
			pthread_mutex_lock(&fd->mu);
		}
	}
	while (fw.remaining)
		pthread_cond_wait(&fd->cond, &fd->mu);
	if (fw.err) {
		e = fw.err;
		goto out;
	}
	/* the commit list: [base if replacing] + pending + the ranges' chunks */
	free(fd->fl);
	fd->fl = NULL;
	fd->nfl = 0;
	chunk_list_clear(&fd->fl_new);
	fid_list_clear(&fd->fl_drop);
	for (size_t i = 0; i < fd->pend_drop.n; i++)
		fid_list_push(&fd->fl_drop, fd->pend_drop.v[i]);
	fd->fl_npend_drop = fd->pend_drop.n;
	for (size_t i = 0; i < fd->nslots; i++)
		for (size_t k = 0; k < fd->slots[i]->n; k++)
			if (fd->slots[i]->r[k].supersedes &&
			    fd->slots[i]->r[k].up_gen == fd->slots[i]->r[k].gen)
				fid_list_push(&fd->fl_drop, fd->slots[i]->r[k].supersedes);
	if (replace) /* the whole list: what is superseded is simply left out */
		for (size_t i = 0; i < fd->base.n; i++)
			if (!fid_list_has(&fd->fl_drop, fd->base.c[i].fid))
				chunk_list_push(&out, &fd->base.c[i]);
	for (size_t i = 0; i < fd->pend.n; i++)
		chunk_list_push(&out, &fd->pend.c[i]);
	for (size_t i = 0; i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		for (size_t k = 0; k < s->n; k++) {
			if (s->r[k].up_gen != s->r[k].gen)
				continue; /* changed since its upload: stays dirty */
			fd->fl = xrealloc(fd->fl, (fd->nfl + 1) * sizeof(*fd->fl));
			fd->fl[fd->nfl++] = (struct flushed){s->index, s->r[k].gen};
			chunk_list_push(&out, &s->r[k].up);
			chunk_list_push(&fd->fl_new, &s->r[k].up);
		}
	}
	fd->fl_npend = fd->pend.n;
	fd->fl_size = fd->size;
	fd->fl_trunc_seq = fd->trunc_seq;
	fd->fl_replace = replace;
	fd->flushing = true;
	*chunks = out.c;
	*n = out.n;
	out.c = NULL;
	mount_data_stat_add(fd->md, &fd->md->st.flushes, 1);
out:
	pthread_mutex_unlock(&fd->mu);
	chunk_list_clear(&out);
	return e;
}

wfs_err file_data_flush(file_data *fd, struct filer_chunk **chunks, size_t *n)
{
	return flush(fd, false, chunks, n);
}

wfs_err file_data_flush_sync(file_data *fd, struct filer_chunk **chunks, size_t *n)
{
	return flush(fd, true, chunks, n);
}

size_t file_data_flush_drops(file_data *fd, char ***fids)
{
	size_t n;
	pthread_mutex_lock(&fd->mu);
	n = fd->flushing ? fd->fl_drop.n : 0;
	*fids = n ? xcalloc(n, sizeof(**fids)) : NULL;
	for (size_t i = 0; i < n; i++)
		(*fids)[i] = xstrdup(fd->fl_drop.v[i]);
	pthread_mutex_unlock(&fd->mu);
	return n;
}

bool file_data_flush_inline(file_data *fd, uint8_t **content, size_t *len)
{
	uint64_t keep;
	uint8_t *c;
	bool ok = false;

	*content = NULL;
	*len = 0;
	pthread_mutex_lock(&fd->mu);
	file_data_wait_quiet(fd);
	if (fd->size > fd->md->inline_max || fd->pend.n || fd->holes_dirty ||
	    !file_data_dirty_locked(fd))
		goto out;
	/* the bytes below keep come from the base: known only when it has no chunks */
	keep = MIN(MIN(fd->base_size, fd->trunc_min), fd->size);
	if (keep && fd->base.n)
		goto out;
	c = xcalloc(1, fd->size ? fd->size : 1);
	if (keep && fd->has_inl && fd->inl_len) /* inl is NULL when empty */
		memcpy(c, fd->inl, MIN(keep, fd->inl_len));
	free(fd->fl);
	fd->fl = NULL;
	fd->nfl = 0;
	for (size_t i = 0; i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		for (size_t k = 0; k < s->n; k++) {
			const struct drange *r = &s->r[k];
			if (r->off < fd->size)
				memcpy(c + r->off, r->data, MIN(r->len, fd->size - r->off));
			fd->fl = xrealloc(fd->fl, (fd->nfl + 1) * sizeof(*fd->fl));
			fd->fl[fd->nfl++] = (struct flushed){s->index, r->gen};
		}
	}
	chunk_list_clear(&fd->fl_new);
	fd->fl_npend = 0;
	fd->fl_size = fd->size;
	fd->fl_trunc_seq = fd->trunc_seq;
	fd->fl_replace = false;
	fd->fl_inline = true;
	fd->fl_content = c;
	fd->flushing = true;
	*len = fd->size;
	if (*len) {
		*content = xmalloc(*len);
		memcpy(*content, c, *len);
	}
	mount_data_stat_add(fd->md, &fd->md->st.flushes, 1);
	ok = true;
out:
	pthread_mutex_unlock(&fd->mu);
	return ok;
}

void file_data_committed(file_data *fd, bool ok)
{
	file_data_commit_result(fd, ok ? WFS_OK : WFS_EIO);
}

/* Whether a failed commit's error says the filer changed nothing (see the header). */
static bool commit_refused(wfs_err rc)
{
	switch (rc) {
	case WFS_ENOENT:
	case WFS_EEXIST:
	case WFS_ENOTDIR:
	case WFS_EISDIR:
	case WFS_EPERM:
	case WFS_EACCES:
	case WFS_EINVAL:
	case WFS_ENOSYS:
	case WFS_ETOOBIG:
	case WFS_ENOSPC:
	case WFS_EQUOTA:
	case WFS_EREADONLY:
		return true;
	default:
		return false; /* EIO, EUNAVAIL, EPRECOND, timeouts: it may have committed */
	}
}

void file_data_commit_result(file_data *fd, wfs_err rc)
{
	uint64_t released = 0;
	bool ok = rc == 0;
	pthread_mutex_lock(&fd->mu);
	if (!fd->flushing) {
		pthread_mutex_unlock(&fd->mu);
		return;
	}
	if (!ok && !commit_refused(rc)) {
		for (size_t i = 0; i < fd->fl_npend; i++)
			if (!fid_list_has(&fd->sent, fd->pend.c[i].fid))
				fid_list_push(&fd->sent, fd->pend.c[i].fid);
		for (size_t i = 0; i < fd->fl_new.n; i++)
			if (!fid_list_has(&fd->sent, fd->fl_new.c[i].fid))
				fid_list_push(&fd->sent, fd->fl_new.c[i].fid);
	}
	if (ok) {
		/* the superseded chunks left the filer's list */
		size_t kept = 0;
		for (size_t i = 0; i < fd->base.n; i++) {
			if (fid_list_has(&fd->fl_drop, fd->base.c[i].fid))
				filer_chunks_clear(&fd->base.c[i], 1);
			else
				fd->base.c[kept++] = fd->base.c[i];
		}
		fd->base.n = kept;
		if (fd->tail_fid && fid_list_has(&fd->fl_drop, fd->tail_fid))
			file_data_tail_drop(fd);
		fid_list_shift(&fd->pend_drop, fd->fl_npend_drop);
		for (size_t i = 0; i < fd->nfl; i++) {
			struct slot *s = file_data_slot_find(fd, fd->fl[i].slot);
			if (!s)
				continue;
			for (size_t k = 0; k < s->n; k++) {
				struct drange *r = &s->r[k];
				if (r->gen != fd->fl[i].gen)
					continue;
				released += r->len;
				/* a small last chunk: kept to merge with the next append */
				if (!fd->fl_inline && r->up.fid && r->len < TAIL_MAX && s->n == 1)
					file_data_tail_save(fd, r, r->up.fid);
				filer_chunks_clear(&r->up, 1); /* in the base now */
				file_data_slot_remove_range(fd, s, k);
				break;
			}
			file_data_slot_drop_if_empty(fd, s);
		}
		/* a range written again during the commit still holds its committed chunk: it
		   is referenced now, so it must never be freed as an orphan */
		for (size_t i = 0; i < fd->nslots; i++) {
			struct slot *s = fd->slots[i];
			for (size_t k = 0; k < s->n; k++) {
				struct drange *r = &s->r[k];
				for (size_t c = 0; r->up.fid && c < fd->fl_new.n; c++) {
					if (!strcmp(r->up.fid, fd->fl_new.c[c].fid)) {
						filer_chunks_clear(&r->up, 1);
						r->up_gen = 0;
					}
				}
			}
		}
		if (fd->fl_replace) {
			/* the base already holds what the list repeated of it */
			fd->filer_inline = false;
		}
		if (fd->fl_inline) {
			/* the filer freed the old chunks; the bytes are the new base */
			file_data_tail_drop(fd);
			chunk_list_clear(&fd->base);
			free(fd->inl);
			fd->inl = fd->fl_content;
			fd->inl_len = fd->fl_size;
			fd->fl_content = NULL;
			fd->has_inl = fd->filer_inline = true;
			fd->base_resolved = true;
		}
		for (size_t i = 0; i < fd->fl_npend; i++)
			chunk_list_push(&fd->base, &fd->pend.c[i]);
		for (size_t i = 0; i < fd->fl_new.n; i++)
			chunk_list_push(&fd->base, &fd->fl_new.c[i]);
		filer_chunks_clear(fd->pend.c, fd->fl_npend);
		if (fd->pend.n > fd->fl_npend)
			memmove(fd->pend.c, fd->pend.c + fd->fl_npend,
				(fd->pend.n - fd->fl_npend) * sizeof(*fd->pend.c));
		fd->pend.n -= fd->fl_npend;
		fd->base_size = fd->fl_size;
		if (fd->trunc_seq == fd->fl_trunc_seq) {
			fd->trunc_min = UINT64_MAX;
			fd->size_dirty = false;
			fd->holes_dirty = false;
		}
		file_data_changed(fd);
	}
	chunk_list_clear(&fd->fl_new);
	free(fd->fl);
	fd->fl = NULL;
	fd->nfl = 0;
	free(fd->fl_content);
	fd->fl_content = NULL;
	fd->fl_inline = false;
	fid_list_clear(&fd->fl_drop);
	fd->fl_npend_drop = 0;
	fd->flushing = false;
	fd->dirty_seen = 0; /* what stays dirty ages from the next scan */
	pthread_cond_broadcast(&fd->cond);
	pthread_mutex_unlock(&fd->mu);
	mount_data_budget_release(fd->md, released);
}
