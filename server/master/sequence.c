/*
 * DESIGN: the file holds "keyCeiling K\nmaxVolumeId V\n". Every key below K
 * may have been handed out, so opening starts at K and immediately persists
 * K + BATCH. Keys are then served from memory until the ceiling is reached,
 * which costs one write_file_atomic per SEQUENCE_BATCH keys. One mutex
 * guards the counters and the file; the write happens under it so a key is
 * never handed out before its ceiling is durable.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "server/master/sequence_int.h"
#include "util.h"

struct seq_file {
	struct sequence base;
	pthread_mutex_t lock;
	char *path;
	uint64_t next;    /* protected by lock: next key to hand out */
	uint64_t ceiling; /* protected by lock: persisted; keys < ceiling are reserved */
	uint32_t max_vid; /* protected by lock: persisted largest volume id */
};

static wfs_err seq_persist(struct seq_file *s, uint64_t ceiling, uint32_t max_vid)
{
	char text[80];
	int n = snprintf(text, sizeof(text), "keyCeiling %" PRIu64 "\nmaxVolumeId %" PRIu32 "\n",
			 ceiling, max_vid);
	if (write_file_atomic(s->path, text, (size_t)n)) {
		log_error("could not write \"%s\": %s", s->path, strerror(errno));
		return WFS_EIO;
	}
	s->ceiling = ceiling;
	s->max_vid = max_vid;
	return WFS_OK;
}

static bool seq_load(const char *path, uint64_t *ceiling, uint32_t *max_vid, wfs_err *err)
{
	char text[256], name[32];
	FILE *f = fopen(path, "r");
	size_t n;
	const char *p;

	*err = WFS_OK;
	if (!f) {
		if (errno != ENOENT)
			*err = WFS_EIO;
		return false;
	}
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	for (p = text; *p;) {
		unsigned long long v;
		int used;
		if (sscanf(p, "%31s %llu%n", name, &v, &used) != 2) {
			*err = WFS_ECORRUPT;
			return false;
		}
		if (!strcmp(name, "keyCeiling"))
			*ceiling = v;
		else if (!strcmp(name, "maxVolumeId") && v <= UINT32_MAX)
			*max_vid = (uint32_t)v;
		p += used;
		while (*p == '\n' || *p == ' ')
			p++;
	}
	return true;
}

static const struct sequence_ops file_ops;

sequence *sequence_open(const char *dir, wfs_err *err)
{
	struct seq_file *s;
	uint64_t ceiling = 1;
	uint32_t max_vid = 0;

	if (!mkdir_p(dir)) {
		log_error("could not create directory \"%s\": %s", dir, strerror(errno));
		*err = WFS_EIO;
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->base.ops = &file_ops;
	pthread_mutex_init(&s->lock, NULL);
	s->path = xasprintf("%s/weedfs_master.seq", dir);
	if (!seq_load(s->path, &ceiling, &max_vid, err) && *err) {
		log_error("could not read \"%s\": %s", s->path, wfs_strerror(*err));
		goto fail;
	}
	if (ceiling == 0)
		ceiling = 1;
	s->next = ceiling;
	*err = seq_persist(s, ceiling + SEQUENCE_BATCH, max_vid);
	if (*err)
		goto fail;
	return &s->base;
fail:
	sequence_free(&s->base);
	return NULL;
}

static void file_free(sequence *base)
{
	struct seq_file *s = (struct seq_file *)base;
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s);
}

/* Makes keys [s->next, want) durable. Called with the lock held. */
static wfs_err seq_reserve_to(struct seq_file *s, uint64_t want)
{
	if (want <= s->ceiling)
		return WFS_OK;
	if (want > UINT64_MAX - SEQUENCE_BATCH)
		return WFS_ERANGE;
	return seq_persist(s, want + SEQUENCE_BATCH, s->max_vid);
}

static wfs_err file_next_keys(sequence *base, uint64_t count, uint64_t *first)
{
	struct seq_file *s = (struct seq_file *)base;
	wfs_err err;
	if (count == 0 || count > UINT64_MAX / 4)
		return WFS_EINVAL;
	pthread_mutex_lock(&s->lock);
	err = seq_reserve_to(s, s->next + count);
	if (!err) {
		*first = s->next;
		s->next += count;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static wfs_err file_observe_key(sequence *base, uint64_t max_key)
{
	struct seq_file *s = (struct seq_file *)base;
	wfs_err err = WFS_OK;
	if (max_key >= UINT64_MAX / 2)
		return WFS_EINVAL;
	pthread_mutex_lock(&s->lock);
	if (max_key >= s->next) {
		err = seq_reserve_to(s, max_key + 1);
		if (!err)
			s->next = max_key + 1;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static uint64_t file_peek(sequence *base)
{
	struct seq_file *s = (struct seq_file *)base;
	uint64_t v;
	pthread_mutex_lock(&s->lock);
	v = s->next;
	pthread_mutex_unlock(&s->lock);
	return v;
}

static wfs_err file_next_volume_id(sequence *base, uint32_t *vid)
{
	struct seq_file *s = (struct seq_file *)base;
	wfs_err err = WFS_ENOSPC;
	pthread_mutex_lock(&s->lock);
	if (s->max_vid < UINT32_MAX) {
		err = seq_persist(s, s->ceiling, s->max_vid + 1);
		if (!err)
			*vid = s->max_vid;
	}
	pthread_mutex_unlock(&s->lock);
	return err;
}

static wfs_err file_observe_volume_id(sequence *base, uint32_t vid)
{
	struct seq_file *s = (struct seq_file *)base;
	wfs_err err = WFS_OK;
	pthread_mutex_lock(&s->lock);
	if (vid > s->max_vid)
		err = seq_persist(s, s->ceiling, vid);
	pthread_mutex_unlock(&s->lock);
	return err;
}

static uint32_t file_max_volume_id(sequence *base)
{
	struct seq_file *s = (struct seq_file *)base;
	uint32_t v;
	pthread_mutex_lock(&s->lock);
	v = s->max_vid;
	pthread_mutex_unlock(&s->lock);
	return v;
}

static wfs_err file_refill(sequence *s, uint64_t count)
{
	(void)s;
	(void)count;
	return WFS_OK; /* sequence_next_keys reserves on disk itself */
}

static const struct sequence_ops file_ops = {
	.free = file_free,
	.next_keys = file_next_keys,
	.refill = file_refill,
	.observe_key = file_observe_key,
	.peek = file_peek,
	.next_volume_id = file_next_volume_id,
	.observe_volume_id = file_observe_volume_id,
	.max_volume_id = file_max_volume_id,
};

/* ---- the interface: one call through the table each ---- */

void sequence_free(sequence *s)
{
	if (s)
		s->ops->free(s);
}

wfs_err sequence_next_keys(sequence *s, uint64_t count, uint64_t *first)
{
	return s->ops->next_keys(s, count, first);
}

wfs_err sequence_refill(sequence *s, uint64_t count) { return s->ops->refill(s, count); }

wfs_err sequence_observe_key(sequence *s, uint64_t max_key)
{
	return s->ops->observe_key(s, max_key);
}

uint64_t sequence_peek(sequence *s) { return s->ops->peek(s); }

wfs_err sequence_next_volume_id(sequence *s, uint32_t *vid)
{
	return s->ops->next_volume_id(s, vid);
}

wfs_err sequence_observe_volume_id(sequence *s, uint32_t vid)
{
	return s->ops->observe_volume_id(s, vid);
}

uint32_t sequence_max_volume_id(sequence *s) { return s->ops->max_volume_id(s); }
