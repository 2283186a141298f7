/*
 * The inode table (inode_table.h).
 *
 * DESIGN: three hash maps (lib/hashmap.h) under one mutex: ino -> record,
 * (parent ino, name) -> name link, hard-link id -> record. A record lists its
 * name links; the first one gives its path. Links carry their name inline, a
 * hard-link id and a symlink target or xattrs hang off a record only when
 * the entry has them, so a plain file costs one record and one link.
 *
 * struct inode is the record's working form: itable_get allocates it from
 * the record (the cached fields move in), the last itable_put moves them
 * back and frees it unless it holds open-file state. Every change of cached
 * fields goes through a struct inode under its mutex (itable_learn makes one
 * for the moment), so the record only stores.
 *
 * A record is freed when the kernel's lookup count and the callers'
 * references are both zero and it holds no open data; its names go with it,
 * so a later lookup of the same name gets a new ino (the counter never goes
 * back, so an ino the kernel may still hold in a stale handle never names
 * another file); st_ino stays the same, it is the filer's number the record
 * caches with the attributes (an entry without one keeps the cached one). glibc keeps freed memory in its arenas: once TRIM_BYTES of
 * records were freed, the forget that crosses the mark calls malloc_trim
 * (outside the table lock), so a walk's memory goes back to the system when
 * the kernel drops its inodes.
 */
#include "config.h"
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "hashmap.h"
#include "inode_table.h"
#include "log.h"
#include "util.h"

/* Longest parent chain a path walk follows (a cycle would be a bug). */
#define PATH_DEPTH_MAX 2048
/* Freed bytes after which a forget gives memory back to the system. */
#define TRIM_BYTES (4u << 20)
/* ... and the rest after the last burst (itable_trim) */
#define TRIM_IDLE_BYTES (256u << 10)
/* Smallest bucket counts; maps shrink back towards them when nodes go. */
#define MAP_MIN    1024
#define HL_MAP_MIN 256

struct inode_extra {
	char *symlink; /* a symlink's target, or NULL */
	struct filer_xattr *xattrs;
	size_t n_xattrs;
};

struct name_link {
	struct hashmap_node hnode; /* in the name map */
	struct name_link *nnext;   /* the record's names */
	struct itable_rec *rec;
	uint64_t parent;
	char name[]; /* NUL-terminated */
};

struct hl_id {
	struct hashmap_node hnode; /* in the hard-link map */
	struct itable_rec *rec;
	size_t len;
	uint8_t id[];
};

/* One node the table knows. Protected by the table's mutex. */
struct itable_rec {
	struct hashmap_node hnode; /* in the ino map */
	struct inode *live;        /* the node's working form while in use, else NULL */
	struct name_link *names;   /* first = the name used for the path */
	struct hl_id *hl;          /* hard-link id or NULL */
	uint64_t ino;
	uint64_t nlookup; /* the kernel's lookup count */
	uint32_t refs;    /* callers holding it (itable_get) */
	bool is_dir;
	/* the cached fields of struct inode while live is NULL */
	bool cached, removed, dir_complete;
	struct inode_attr attr;
	uint64_t cached_until, cached_at, alloc_bytes, kc_sig, kc_chunks_sig;
};

struct itable {
	pthread_mutex_t mu;
	char *root_path;
	uint64_t next_ino; /* protected by mu, as everything below */
	size_t n_live;
	struct hashmap ino_map;  /* of struct itable_rec by ino */
	struct hashmap name_map; /* of struct name_link by (parent, name) */
	struct hashmap hl_map;   /* of struct hl_id by id */
	struct itable_rec *root;
	uint64_t freed; /* bytes freed since the last trim */
	size_t trims;
};

static uint64_t hash_bytes(uint64_t seed, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull ^ seed;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static uint64_t hash_ino(uint64_t ino)
{
	ino ^= ino >> 33;
	ino *= 0xff51afd7ed558ccdull;
	return ino ^ (ino >> 33);
}

static uint64_t hash_name(uint64_t parent, const char *name)
{
	return hash_bytes(parent * 0x9e3779b97f4a7c15ull, name, strlen(name));
}

/* Frees p and counts its bytes towards the next trim. Caller holds t->mu. */
static void t_free(itable *t, void *p)
{
	if (!p)
		return;
	t->freed += malloc_usable_size(p);
	free(p);
}

/* ---- maps (callers hold t->mu) ---- */

static uint64_t rec_hash(const struct hashmap_node *n)
{
	return hash_ino(hashmap_entry(n, struct itable_rec, hnode)->ino);
}

static bool rec_eq(const struct hashmap_node *n, const void *key)
{
	return hashmap_entry(n, struct itable_rec, hnode)->ino == *(const uint64_t *)key;
}

static struct itable_rec *rec_find(itable *t, uint64_t ino)
{
	return hashmap_entry(hashmap_find(&t->ino_map, hash_ino(ino), rec_eq, &ino),
			     struct itable_rec, hnode);
}

static uint64_t link_hash(const struct hashmap_node *n)
{
	const struct name_link *l = hashmap_entry(n, struct name_link, hnode);

	return hash_name(l->parent, l->name);
}

struct name_key {
	uint64_t parent;
	const char *name;
};

static bool link_eq(const struct hashmap_node *n, const void *key)
{
	const struct name_link *l = hashmap_entry(n, struct name_link, hnode);
	const struct name_key *k = key;

	return l->parent == k->parent && !strcmp(l->name, k->name);
}

static struct name_link *name_find(itable *t, uint64_t parent, const char *name)
{
	struct name_key k = {parent, name};

	return hashmap_entry(hashmap_find(&t->name_map, hash_name(parent, name), link_eq, &k),
			     struct name_link, hnode);
}

/* The slot in l's record's name list that points at l. */
static struct name_link **link_slot(struct name_link *l)
{
	struct name_link **pp = &l->rec->names;

	while (*pp && *pp != l)
		pp = &(*pp)->nnext;
	return pp;
}

/* Detaches l from the name map and its record, and frees it. */
static void link_drop(itable *t, struct name_link *l)
{
	struct name_link **pp = link_slot(l);

	hashmap_remove(&t->name_map, &l->hnode);
	if (*pp)
		*pp = l->nnext;
	t_free(t, l);
}

static struct name_link *link_alloc(uint64_t parent, const char *name)
{
	size_t len = strlen(name);
	struct name_link *l = xmalloc(sizeof(*l) + len + 1);

	l->hnode.next = NULL;
	l->nnext = NULL;
	l->rec = NULL;
	l->parent = parent;
	memcpy(l->name, name, len + 1);
	return l;
}

static void link_add(itable *t, struct itable_rec *r, uint64_t parent, const char *name)
{
	struct name_link *l = link_alloc(parent, name), **pp;

	l->rec = r;
	/* append: the first name keeps giving the path */
	for (pp = &r->names; *pp; pp = &(*pp)->nnext)
		;
	*pp = l;
	hashmap_insert(&t->name_map, &l->hnode);
}

/* Moves l to (p, name) keeping its place among its record's names. */
static void link_move(itable *t, struct name_link *l, uint64_t p, const char *name)
{
	struct name_link *nl = link_alloc(p, name), **pp = link_slot(l);

	hashmap_remove(&t->name_map, &l->hnode);
	nl->rec = l->rec;
	nl->nnext = l->nnext;
	*pp = nl;
	t_free(t, l);
	hashmap_insert(&t->name_map, &nl->hnode);
}

static uint64_t hl_hash(const struct hashmap_node *n)
{
	const struct hl_id *h = hashmap_entry(n, struct hl_id, hnode);

	return hash_bytes(0, h->id, h->len);
}

struct hl_key {
	const uint8_t *id;
	size_t len;
};

static bool hl_eq(const struct hashmap_node *n, const void *key)
{
	const struct hl_id *h = hashmap_entry(n, struct hl_id, hnode);
	const struct hl_key *k = key;

	return h->len == k->len && !memcmp(h->id, k->id, k->len);
}

static struct hl_id *hl_find(itable *t, const uint8_t *id, size_t len)
{
	struct hl_key k = {id, len};

	return hashmap_entry(hashmap_find(&t->hl_map, hash_bytes(0, id, len), hl_eq, &k),
			     struct hl_id, hnode);
}

static void hl_set(itable *t, struct itable_rec *r, const uint8_t *id, size_t len)
{
	struct hl_id *h;

	if (r->hl || !len || hl_find(t, id, len))
		return;
	h = xmalloc(sizeof(*h) + len);
	h->rec = r;
	h->len = len;
	memcpy(h->id, id, len);
	hashmap_insert(&t->hl_map, &h->hnode);
	r->hl = h;
}

static void hl_remove(itable *t, struct itable_rec *r)
{
	if (!r->hl)
		return;
	hashmap_remove(&t->hl_map, &r->hl->hnode);
	t_free(t, r->hl);
	r->hl = NULL;
}

/* ---- cached attributes ---- */

static void extra_free(itable *t, struct inode_extra *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n_xattrs; i++) {
		free(x->xattrs[i].name);
		free(x->xattrs[i].value);
	}
	free(x->xattrs);
	free(x->symlink);
	if (t)
		t_free(t, x);
	else
		free(x);
}

/* What the mount keeps of e: the fixed attributes, and a symlink's target and xattrs apart. */
static void attr_from_entry(struct inode_attr *a, const struct filer_entry *e)
{
	const struct filer_attr *s = &e->attr;
	bool link = S_ISLNK(s->mode) && s->symlink_target;

	*a = (struct inode_attr){.size = s->size,
				 .mtime_ns = s->mtime_ns,
				 .ctime_ns = s->ctime_ns,
				 .atime_ns = s->atime_ns,
				 .rdev = s->rdev,
				 .mode = s->mode,
				 .uid = s->uid,
				 .gid = s->gid,
				 .nlink = s->nlink,
				 .filer_ino = s->inode};
	if (!link && !e->n_xattrs)
		return;
	a->extra = xcalloc(1, sizeof(*a->extra));
	if (link)
		a->extra->symlink = xstrdup(s->symlink_target);
	if (e->n_xattrs) {
		a->extra->xattrs = xcalloc(e->n_xattrs, sizeof(*a->extra->xattrs));
		a->extra->n_xattrs = e->n_xattrs;
		for (size_t i = 0; i < e->n_xattrs; i++) {
			struct filer_xattr *d = &a->extra->xattrs[i];
			d->name = xstrdup(e->xattrs[i].name);
			d->value_len = e->xattrs[i].value_len;
			if (d->value_len) {
				d->value = xmalloc(d->value_len);
				memcpy(d->value, e->xattrs[i].value, d->value_len);
			}
		}
	}
}

struct filer_entry *itable_cached_entry(const struct inode *n)
{
	const struct inode_attr *a = &n->attr;
	const struct inode_extra *x = a->extra;
	struct filer_entry *e;

	if (!n->cached)
		return NULL;
	e = filer_entry_new("/", "");
	e->attr.mode = a->mode;
	e->attr.uid = a->uid;
	e->attr.gid = a->gid;
	e->attr.size = a->size;
	e->attr.mtime_ns = a->mtime_ns;
	e->attr.ctime_ns = a->ctime_ns;
	e->attr.atime_ns = a->atime_ns;
	e->attr.nlink = a->nlink;
	e->attr.inode = a->filer_ino;
	e->attr.rdev = a->rdev;
	if (x && x->symlink)
		e->attr.symlink_target = xstrdup(x->symlink);
	if (x && x->n_xattrs) {
		e->xattrs = xcalloc(x->n_xattrs, sizeof(*e->xattrs));
		e->n_xattrs = x->n_xattrs;
		for (size_t i = 0; i < x->n_xattrs; i++) {
			e->xattrs[i].name = xstrdup(x->xattrs[i].name);
			e->xattrs[i].value_len = x->xattrs[i].value_len;
			if (x->xattrs[i].value_len) {
				e->xattrs[i].value = xmalloc(x->xattrs[i].value_len);
				memcpy(e->xattrs[i].value, x->xattrs[i].value,
				       x->xattrs[i].value_len);
			}
		}
	}
	return e;
}

struct extent {
	uint64_t lo, hi;
};

static int extent_cmp(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

uint64_t itable_alloc_bytes(const struct filer_entry *e)
{
	uint64_t size = e->attr.size, total = 0, end = 0;
	struct extent *v;
	size_t n = 0;

	if (!S_ISREG(e->attr.mode))
		return 0;
	if (e->content_len)
		return e->content_len < size ? e->content_len : size;
	if (!e->n_chunks)
		return 0;
	v = xcalloc(e->n_chunks, sizeof(*v));
	for (size_t i = 0; i < e->n_chunks; i++) {
		uint64_t lo = e->chunks[i].offset, hi = lo + e->chunks[i].size;
		if (hi > size)
			hi = size;
		if (lo < hi)
			v[n++] = (struct extent){lo, hi};
	}
	qsort(v, n, sizeof(*v), extent_cmp);
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = v[i].lo > end ? v[i].lo : end;
		if (v[i].hi > lo)
			total += v[i].hi - lo;
		if (v[i].hi > end)
			end = v[i].hi;
	}
	free(v);
	return total;
}

/* Replaces n's cached attributes by e's. The caller holds a reference to n. */
static void node_cache(struct inode *n, const struct filer_entry *e, uint64_t cache_ns)
{
	struct inode_attr a;
	uint64_t alloc = itable_alloc_bytes(e);
	struct inode_extra *old;

	attr_from_entry(&a, e);
	pthread_mutex_lock(&n->mu);
	/* a stale entry may have missed a change of the directory's names */
	if (!n->cached_until || time_mono_ns() >= n->cached_until)
		atomic_store(&n->dir_complete, false);
	/* a directory time the mount has not stored yet (fuse_attrs_touch_dir) wins */
	if (n->touch_pending_ns && n->touch_pending_ns > a.mtime_ns)
		a.mtime_ns = n->touch_pending_ns;
	if (n->touch_pending_ns && n->touch_pending_ns > a.ctime_ns)
		a.ctime_ns = n->touch_pending_ns;
	/* an entry the mount built itself (no number) does not make the file another */
	if (!a.filer_ino)
		a.filer_ino = n->attr.filer_ino;
	old = n->attr.extra;
	n->attr = a;
	n->cached = true;
	n->alloc_bytes = alloc;
	n->cached_at = time_mono_ns();
	n->cached_until = cache_ns ? n->cached_at + cache_ns : 0;
	pthread_mutex_unlock(&n->mu);
	extra_free(NULL, old);
}

/* ---- records and their working form (callers hold t->mu) ---- */

static struct itable_rec *rec_new(itable *t, bool is_dir)
{
	struct itable_rec *r = xcalloc(1, sizeof(*r));

	r->ino = t->next_ino++;
	r->is_dir = is_dir;
	hashmap_insert(&t->ino_map, &r->hnode);
	return r;
}

/*
 * Frees n and what it owns (its cached fields were not moved back). Not
 * counted towards a trim: every get and put makes and frees one, the space
 * is reused at once.
 */
static void live_destroy(itable *t, struct inode *n)
{
	extra_free(NULL, n->attr.extra);
	free(n->hidden_name);
	pthread_mutex_destroy(&n->mu);
	pthread_mutex_destroy(&n->commit_mu);
	free(n);
	t->n_live--;
}

/* r's struct inode, made from the record if it has none, with one more caller reference. */
static struct inode *live_get(itable *t, struct itable_rec *r)
{
	struct inode *n = r->live;

	if (!n) {
		n = xcalloc(1, sizeof(*n));
		n->ino = r->ino;
		n->is_dir = r->is_dir;
		pthread_mutex_init(&n->mu, NULL);
		pthread_mutex_init(&n->commit_mu, NULL);
		n->cached = r->cached;
		n->attr = r->attr;
		n->cached_until = r->cached_until;
		n->cached_at = r->cached_at;
		n->alloc_bytes = r->alloc_bytes;
		n->removed = r->removed;
		n->kc_sig = r->kc_sig;
		n->kc_chunks_sig = r->kc_chunks_sig;
		atomic_store(&n->dir_complete, r->dir_complete);
		n->priv = r;
		r->attr.extra = NULL; /* moved */
		r->live = n;
		t->n_live++;
	}
	r->refs++;
	return n;
}

/* Whether n holds nothing beyond what the record keeps (nobody holds it). */
static bool live_idle(const struct inode *n)
{
	return !n->fd && !n->open_count && !n->hidden_name && !n->unlinked && !n->data_mtime_ns &&
	       !n->atime_pending_ns && !n->touch_pending_ns;
}

/* Moves the cached fields of r's unreferenced struct inode back and frees it. */
static void live_store(itable *t, struct itable_rec *r)
{
	struct inode *n = r->live;

	r->cached = n->cached;
	r->attr = n->attr;
	n->attr.extra = NULL; /* moved */
	r->cached_until = n->cached_until;
	r->cached_at = n->cached_at;
	r->alloc_bytes = n->alloc_bytes;
	r->removed = n->removed;
	r->kc_sig = n->kc_sig;
	r->kc_chunks_sig = n->kc_chunks_sig;
	r->dir_complete = atomic_load(&n->dir_complete);
	r->live = NULL;
	live_destroy(t, n);
}

static void dir_incomplete(itable *t, uint64_t ino)
{
	struct itable_rec *p = rec_find(t, ino);

	if (p && p->live)
		atomic_store(&p->live->dir_complete, false);
	else if (p)
		p->dir_complete = false;
}

/*
 * After a reference or lookup went: frees r if nothing holds it any more,
 * else drops its struct inode when no caller holds that.
 */
static void rec_release(itable *t, struct itable_rec *r)
{
	if (r->refs || (r->live && r->live->fd))
		return;
	if (r == t->root || r->nlookup) {
		if (r->live && live_idle(r->live))
			live_store(t, r);
		return;
	}
	while (r->names) {
		/* the parent no longer knows every name it has */
		dir_incomplete(t, r->names->parent);
		link_drop(t, r->names);
	}
	hl_remove(t, r);
	hashmap_remove(&t->ino_map, &r->hnode);
	if (r->live)
		live_destroy(t, r->live);
	extra_free(t, r->attr.extra);
	t_free(t, r);
}

itable *itable_new(const char *root_path)
{
	itable *t = xcalloc(1, sizeof(*t));

	pthread_mutex_init(&t->mu, NULL);
	t->root_path = xstrdup(root_path);
	t->next_ino = ITABLE_ROOT;
	hashmap_init(&t->ino_map, MAP_MIN, rec_hash);
	hashmap_init(&t->name_map, MAP_MIN, link_hash);
	hashmap_init(&t->hl_map, HL_MAP_MIN, hl_hash);
	t->root = rec_new(t, true);
	t->root->nlookup = 1;
	return t;
}

void itable_free(itable *t)
{
	struct hashmap_iter it;
	struct hashmap_node *hn;

	if (!t)
		return;
	hashmap_foreach(&t->ino_map, it, hn) {
		struct itable_rec *r = hashmap_entry(hn, struct itable_rec, hnode);
		while (r->names) {
			struct name_link *l = r->names;
			r->names = l->nnext;
			free(l);
		}
		free(r->hl);
		if (r->live)
			live_destroy(t, r->live);
		extra_free(NULL, r->attr.extra);
		free(r);
	}
	hashmap_destroy(&t->ino_map);
	hashmap_destroy(&t->name_map);
	hashmap_destroy(&t->hl_map);
	free(t->root_path);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

uint64_t itable_learn(itable *t, uint64_t parent, const char *name, const struct filer_entry *e,
		      uint64_t cache_ns)
{
	bool is_dir = (e->attr.mode & S_IFMT) == S_IFDIR;
	const uint8_t *hl = e->attr.hard_link_id;
	size_t hl_len = e->attr.hard_link_id_len;
	struct itable_rec *r = NULL;
	struct name_link *l;
	struct hl_id *h;
	struct inode *n;
	uint64_t ino;

	pthread_mutex_lock(&t->mu);
	if (!rec_find(t, parent)) {
		pthread_mutex_unlock(&t->mu);
		return 0;
	}
	l = name_find(t, parent, name);
	if (l) {
		r = l->rec;
		/* another file now has this name: the old node loses it */
		if (r->is_dir != is_dir ||
		    (hl_len && r->hl && (r->hl->len != hl_len || memcmp(r->hl->id, hl, hl_len)))) {
			link_drop(t, l);
			rec_release(t, r);
			r = NULL;
		}
	}
	if (!r && hl_len && (h = hl_find(t, hl, hl_len)) != NULL) {
		r = h->rec;
		link_add(t, r, parent, name);
	}
	if (!r) {
		r = rec_new(t, is_dir);
		link_add(t, r, parent, name);
	}
	if (hl_len)
		hl_set(t, r, hl, hl_len);
	r->nlookup++;
	ino = r->ino;
	/* the cached fields change in the working form only (its mutex orders them) */
	n = live_get(t, r);
	node_cache(n, e, cache_ns);
	r->refs--;
	rec_release(t, r);
	pthread_mutex_unlock(&t->mu);
	return ino;
}

bool itable_ref(itable *t, uint64_t ino)
{
	struct itable_rec *r;

	pthread_mutex_lock(&t->mu);
	r = rec_find(t, ino);
	if (r)
		r->nlookup++;
	pthread_mutex_unlock(&t->mu);
	return r != NULL;
}

void itable_forget(itable *t, uint64_t ino, uint64_t nl)
{
	struct itable_rec *r;
	bool trim = false;

	pthread_mutex_lock(&t->mu);
	r = rec_find(t, ino);
	if (r && r != t->root) {
		r->nlookup = nl >= r->nlookup ? 0 : r->nlookup - nl;
		rec_release(t, r);
	}
	if (t->freed >= TRIM_BYTES) {
		t->freed = 0;
		t->trims++;
		trim = true;
	}
	pthread_mutex_unlock(&t->mu);
	/* the kernel forgets in bursts (memory pressure, drop_caches): give it back */
	if (trim)
		malloc_trim(0);
}

void itable_trim(itable *t)
{
	bool trim = false;

	pthread_mutex_lock(&t->mu);
	if (t->freed >= TRIM_IDLE_BYTES) {
		t->freed = 0;
		t->trims++;
		trim = true;
	}
	pthread_mutex_unlock(&t->mu);
	if (trim)
		malloc_trim(0);
}

struct inode *itable_get(itable *t, uint64_t ino)
{
	struct itable_rec *r;
	struct inode *n = NULL;

	pthread_mutex_lock(&t->mu);
	r = rec_find(t, ino);
	if (r)
		n = live_get(t, r);
	pthread_mutex_unlock(&t->mu);
	return n;
}

void itable_put(itable *t, struct inode *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&t->mu);
	n->priv->refs--;
	rec_release(t, n->priv);
	pthread_mutex_unlock(&t->mu);
}

struct inode *itable_get_name(itable *t, uint64_t parent, const char *name)
{
	struct name_link *l;
	struct inode *n = NULL;

	pthread_mutex_lock(&t->mu);
	l = name_find(t, parent, name);
	if (l)
		n = live_get(t, l->rec);
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* Appends the path of r to out (root first). Caller holds t->mu. */
static bool path_of(itable *t, struct itable_rec *r, buf *out)
{
	const char *comps[PATH_DEPTH_MAX];
	size_t depth = 0;

	while (r != t->root) {
		struct name_link *l = r->names;
		if (!l || depth == PATH_DEPTH_MAX)
			return false;
		comps[depth++] = l->name;
		r = rec_find(t, l->parent);
		if (!r)
			return false;
	}
	if (!strcmp(t->root_path, "/")) {
		if (!depth)
			buf_append_str(out, "/");
	} else {
		buf_append_str(out, t->root_path);
	}
	while (depth) {
		buf_append_byte(out, '/');
		buf_append_str(out, comps[--depth]);
	}
	return true;
}

char *itable_path(itable *t, uint64_t ino)
{
	struct itable_rec *r;
	bool ok = false;
	buf b;

	buf_init(&b);
	pthread_mutex_lock(&t->mu);
	r = rec_find(t, ino);
	if (r)
		ok = path_of(t, r, &b);
	pthread_mutex_unlock(&t->mu);
	if (!ok) {
		buf_free(&b);
		return NULL;
	}
	buf_append_byte(&b, '\0');
	return buf_steal(&b, NULL);
}

char *itable_child_path(itable *t, uint64_t parent, const char *name)
{
	char *p = itable_path(t, parent), *c;

	if (!p)
		return NULL;
	c = xasprintf("%s%s%s", p, strcmp(p, "/") ? "/" : "", name);
	free(p);
	return c;
}

uint64_t itable_resolve(itable *t, const char *path)
{
	size_t rl = strlen(t->root_path);
	const char *p = path;
	uint64_t ino = ITABLE_ROOT;

	if (strcmp(t->root_path, "/")) {
		if (strncmp(path, t->root_path, rl) || (path[rl] != '/' && path[rl] != '\0'))
			return 0;
		p = path + rl;
	}
	pthread_mutex_lock(&t->mu);
	while (*p) {
		const char *s;
		char comp[FILER_NAME_MAX + 1];
		struct name_link *l;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		s = strchr(p, '/');
		len = s ? (size_t)(s - p) : strlen(p);
		if (len > FILER_NAME_MAX) {
			ino = 0;
			break;
		}
		memcpy(comp, p, len);
		comp[len] = '\0';
		l = name_find(t, ino, comp);
		if (!l) {
			ino = 0;
			break;
		}
		ino = l->rec->ino;
		p += len;
	}
	pthread_mutex_unlock(&t->mu);
	return ino;
}

void itable_unlink(itable *t, uint64_t parent, const char *name)
{
	struct name_link *l;

	pthread_mutex_lock(&t->mu);
	l = name_find(t, parent, name);
	if (l) {
		struct itable_rec *r = l->rec;
		link_drop(t, l);
		rec_release(t, r);
	}
	pthread_mutex_unlock(&t->mu);
}

void itable_rename(itable *t, uint64_t p1, const char *n1, uint64_t p2, const char *n2,
		   bool exchange)
{
	struct name_link *a, *b;

	pthread_mutex_lock(&t->mu);
	a = name_find(t, p1, n1);
	b = name_find(t, p2, n2);
	if (a == b)
		goto out;
	if (exchange) {
		struct itable_rec *ra = a ? a->rec : NULL, *rb = b ? b->rec : NULL;
		if (a)
			link_drop(t, a);
		if (b)
			link_drop(t, b);
		if (ra)
			link_add(t, ra, p2, n2);
		if (rb)
			link_add(t, rb, p1, n1);
		goto out;
	}
	if (b) {
		struct itable_rec *rb = b->rec;
		link_drop(t, b);
		rec_release(t, rb);
	}
	if (a)
		link_move(t, a, p2, n2);
out:
	pthread_mutex_unlock(&t->mu);
}

void itable_cache(struct inode *n, const struct filer_entry *e, uint64_t cache_ns)
{
	node_cache(n, e, cache_ns);
}

void itable_uncache(struct inode *n)
{
	pthread_mutex_lock(&n->mu);
	n->cached_until = 0;
	atomic_store(&n->dir_complete, false);
	pthread_mutex_unlock(&n->mu);
}

void itable_uncache_all(itable *t)
{
	struct hashmap_iter it;
	struct hashmap_node *hn;

	pthread_mutex_lock(&t->mu);
	hashmap_foreach(&t->ino_map, it, hn) {
		struct itable_rec *r = hashmap_entry(hn, struct itable_rec, hnode);
		if (r->live) {
			pthread_mutex_lock(&r->live->mu);
			r->live->cached_until = 0;
			pthread_mutex_unlock(&r->live->mu);
		} else {
			r->cached_until = 0;
		}
	}
	pthread_mutex_unlock(&t->mu);
}

bool itable_known_absent(itable *t, uint64_t parent, const char *name)
{
	struct itable_rec *p;
	bool r = false;

	pthread_mutex_lock(&t->mu);
	p = rec_find(t, parent);
	if (p && (p->live ? atomic_load(&p->live->dir_complete) : p->dir_complete))
		r = !name_find(t, parent, name);
	pthread_mutex_unlock(&t->mu);
	return r;
}

void itable_set_hardlink(itable *t, uint64_t ino, const uint8_t *id, size_t len)
{
	struct itable_rec *r;

	pthread_mutex_lock(&t->mu);
	r = rec_find(t, ino);
	if (r)
		hl_set(t, r, id, len);
	pthread_mutex_unlock(&t->mu);
}

uint64_t itable_parent(itable *t, uint64_t ino)
{
	struct itable_rec *r;
	uint64_t p = ITABLE_ROOT;

	pthread_mutex_lock(&t->mu);
	r = rec_find(t, ino);
	if (r && r->names)
		p = r->names->parent;
	pthread_mutex_unlock(&t->mu);
	return p;
}

void itable_foreach(itable *t, void (*fn)(struct inode *n, void *arg), void *arg)
{
	struct hashmap_iter it;
	struct hashmap_node *hn;

	pthread_mutex_lock(&t->mu);
	hashmap_foreach(&t->ino_map, it, hn) {
		struct itable_rec *r = hashmap_entry(hn, struct itable_rec, hnode);
		if (r->live)
			fn(r->live, arg);
	}
	pthread_mutex_unlock(&t->mu);
}

size_t itable_count(itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = hashmap_count(&t->ino_map);
	pthread_mutex_unlock(&t->mu);
	return n;
}

void itable_get_stats(itable *t, struct itable_stats *st)
{
	pthread_mutex_lock(&t->mu);
	st->nodes = hashmap_count(&t->ino_map);
	st->in_use = t->n_live;
	st->trims = t->trims;
	st->freed = t->freed;
	pthread_mutex_unlock(&t->mu);
}
