/*
 * The inode table (inode_table.h).
 *
 * DESIGN: three chained hash maps under one mutex: ino -> node, (parent ino,
 * name) -> name link, hard-link id -> node. A node lists its name links; the
 * first one gives its path. A node is freed when the kernel's lookup count
 * and the callers' references are both zero and it holds no open data; its
 * names go with it, so a later lookup of the same name gets a new ino (the
 * counter never goes back, so an ino the kernel may still hold in a stale
 * handle never names another file).
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "inode_table.h"
#include "log.h"
#include "util.h"

/* Longest parent chain a path walk follows (a cycle would be a bug). */
#define PATH_DEPTH_MAX 2048

struct name_link {
	struct name_link *hnext; /* name map chain */
	struct name_link *nnext; /* the node's names */
	uint64_t parent;
	char *name;
	struct inode *node;
};

struct itable_priv {
	struct inode *hnext_ino; /* ino map chain */
	struct inode *hnext_hl;  /* hard-link map chain */
	struct name_link *names; /* first = the name used for the path */
	uint64_t nlookup;        /* the kernel's lookup count */
	uint64_t refs;           /* callers holding it (itable_get) */
	uint8_t *hlid;           /* hard-link id or NULL */
	size_t hlid_len;
};

struct itable {
	pthread_mutex_t mu;
	char *root_path;
	uint64_t next_ino; /* protected by mu */
	size_t n_nodes;
	struct inode **ino_map; /* protected by mu; cap_ino buckets */
	size_t cap_ino;
	struct name_link **name_map; /* cap_name buckets */
	size_t cap_name;
	size_t n_names;
	struct inode **hl_map; /* cap_hl buckets */
	size_t cap_hl;
	struct inode *root;
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

/* ---- maps (callers hold t->mu) ---- */

static struct inode *ino_find(itable *t, uint64_t ino)
{
	for (struct inode *n = t->ino_map[hash_ino(ino) & (t->cap_ino - 1)]; n;
	     n = n->priv->hnext_ino)
		if (n->ino == ino)
			return n;
	return NULL;
}

static void ino_insert(itable *t, struct inode *n)
{
	if (t->n_nodes + 1 > t->cap_ino) {
		size_t cap = t->cap_ino * 2;
		struct inode **m = xcalloc(cap, sizeof(*m));
		for (size_t i = 0; i < t->cap_ino; i++) {
			struct inode *x = t->ino_map[i], *next;
			for (; x; x = next) {
				next = x->priv->hnext_ino;
				size_t b = hash_ino(x->ino) & (cap - 1);
				x->priv->hnext_ino = m[b];
				m[b] = x;
			}
		}
		free(t->ino_map);
		t->ino_map = m;
		t->cap_ino = cap;
	}
	size_t b = hash_ino(n->ino) & (t->cap_ino - 1);
	n->priv->hnext_ino = t->ino_map[b];
	t->ino_map[b] = n;
	t->n_nodes++;
}

static void ino_remove(itable *t, struct inode *n)
{
	struct inode **pp = &t->ino_map[hash_ino(n->ino) & (t->cap_ino - 1)];
	for (; *pp; pp = &(*pp)->priv->hnext_ino) {
		if (*pp == n) {
			*pp = n->priv->hnext_ino;
			t->n_nodes--;
			return;
		}
	}
}

static struct name_link *name_find(itable *t, uint64_t parent, const char *name)
{
	struct name_link *l = t->name_map[hash_name(parent, name) & (t->cap_name - 1)];
	for (; l; l = l->hnext)
		if (l->parent == parent && !strcmp(l->name, name))
			return l;
	return NULL;
}

static void name_map_insert(itable *t, struct name_link *l)
{
	if (t->n_names + 1 > t->cap_name) {
		size_t cap = t->cap_name * 2;
		struct name_link **m = xcalloc(cap, sizeof(*m));
		for (size_t i = 0; i < t->cap_name; i++) {
			struct name_link *x = t->name_map[i], *next;
			for (; x; x = next) {
				next = x->hnext;
				size_t b = hash_name(x->parent, x->name) & (cap - 1);
				x->hnext = m[b];
				m[b] = x;
			}
		}
		free(t->name_map);
		t->name_map = m;
		t->cap_name = cap;
	}
	size_t b = hash_name(l->parent, l->name) & (t->cap_name - 1);
	l->hnext = t->name_map[b];
	t->name_map[b] = l;
	t->n_names++;
}

static void name_map_remove(itable *t, struct name_link *l)
{
	struct name_link **pp = &t->name_map[hash_name(l->parent, l->name) & (t->cap_name - 1)];
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == l) {
			*pp = l->hnext;
			t->n_names--;
			return;
		}
	}
}

/* Detaches l from the name map and its node, and frees it. */
static void link_drop(itable *t, struct name_link *l)
{
	struct name_link **pp;

	name_map_remove(t, l);
	for (pp = &l->node->priv->names; *pp; pp = &(*pp)->nnext) {
		if (*pp == l) {
			*pp = l->nnext;
			break;
		}
	}
	free(l->name);
	free(l);
}

static void link_add(itable *t, struct inode *n, uint64_t parent, const char *name)
{
	struct name_link *l = xcalloc(1, sizeof(*l)), **pp;

	l->parent = parent;
	l->name = xstrdup(name);
	l->node = n;
	/* append: the first name keeps giving the path */
	for (pp = &n->priv->names; *pp; pp = &(*pp)->nnext)
		;
	*pp = l;
	name_map_insert(t, l);
}

static struct inode *hl_find(itable *t, const uint8_t *id, size_t len)
{
	struct inode *n = t->hl_map[hash_bytes(0, id, len) & (t->cap_hl - 1)];
	for (; n; n = n->priv->hnext_hl)
		if (n->priv->hlid_len == len && !memcmp(n->priv->hlid, id, len))
			return n;
	return NULL;
}

static void hl_set(itable *t, struct inode *n, const uint8_t *id, size_t len)
{
	size_t b;

	if (n->priv->hlid || !len || hl_find(t, id, len))
		return;
	n->priv->hlid = xmalloc(len);
	memcpy(n->priv->hlid, id, len);
	n->priv->hlid_len = len;
	b = hash_bytes(0, id, len) & (t->cap_hl - 1);
	n->priv->hnext_hl = t->hl_map[b];
	t->hl_map[b] = n;
}

static void hl_remove(itable *t, struct inode *n)
{
	struct inode **pp;

	if (!n->priv->hlid)
		return;
	pp = &t->hl_map[hash_bytes(0, n->priv->hlid, n->priv->hlid_len) & (t->cap_hl - 1)];
	for (; *pp; pp = &(*pp)->priv->hnext_hl) {
		if (*pp == n) {
			*pp = n->priv->hnext_hl;
			break;
		}
	}
}

static struct inode *node_new(itable *t, bool is_dir)
{
	struct inode *n = xcalloc(1, sizeof(*n));

	n->priv = xcalloc(1, sizeof(*n->priv));
	n->ino = t->next_ino++;
	n->is_dir = is_dir;
	pthread_mutex_init(&n->mu, NULL);
	pthread_mutex_init(&n->commit_mu, NULL);
	ino_insert(t, n);
	return n;
}

static void node_destroy(struct inode *n)
{
	filer_entry_free(n->cached);
	free(n->hidden_name);
	pthread_mutex_destroy(&n->mu);
	pthread_mutex_destroy(&n->commit_mu);
	free(n->priv->hlid);
	free(n->priv);
	free(n);
}

/* Frees n if nothing holds it any more. */
static void node_maybe_free(itable *t, struct inode *n)
{
	if (n == t->root || n->priv->nlookup || n->priv->refs || n->fd)
		return;
	while (n->priv->names) {
		/* the parent no longer knows every name it has */
		struct inode *p = ino_find(t, n->priv->names->parent);
		if (p)
			atomic_store(&p->dir_complete, false);
		link_drop(t, n->priv->names);
	}
	hl_remove(t, n);
	ino_remove(t, n);
	node_destroy(n);
}

/* Replaces n's cached entry with a copy of e without its chunks (they can be large). */
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

static void node_cache(struct inode *n, const struct filer_entry *e, uint64_t cache_ns)
{
	struct filer_entry *c = filer_entry_dup(e);
	uint64_t alloc = itable_alloc_bytes(e);

	/* data is never read from here (opens look the entry up): no chunks, no content */
	filer_chunks_free(c->chunks, c->n_chunks);
	c->chunks = NULL;
	c->n_chunks = c->cap_chunks = 0;
	free(c->content);
	c->content = NULL;
	c->content_len = 0;
	pthread_mutex_lock(&n->mu);
	/* a stale entry may have missed a change of the directory's names */
	if (!n->cached_until || time_mono_ns() >= n->cached_until)
		atomic_store(&n->dir_complete, false);
	/* a directory time the mount has not stored yet (fuse_ops.c touch_dir) wins */
	if (n->touch_pending_ns && n->touch_pending_ns > c->attr.mtime_ns)
		c->attr.mtime_ns = n->touch_pending_ns;
	if (n->touch_pending_ns && n->touch_pending_ns > c->attr.ctime_ns)
		c->attr.ctime_ns = n->touch_pending_ns;
	filer_entry_free(n->cached);
	n->cached = c;
	n->alloc_bytes = alloc;
	n->cached_at = time_mono_ns();
	n->cached_until = cache_ns ? n->cached_at + cache_ns : 0;
	pthread_mutex_unlock(&n->mu);
}

itable *itable_new(const char *root_path)
{
	itable *t = xcalloc(1, sizeof(*t));

	pthread_mutex_init(&t->mu, NULL);
	t->root_path = xstrdup(root_path);
	t->next_ino = ITABLE_ROOT;
	t->cap_ino = t->cap_name = 1024;
	t->cap_hl = 256;
	t->ino_map = xcalloc(t->cap_ino, sizeof(*t->ino_map));
	t->name_map = xcalloc(t->cap_name, sizeof(*t->name_map));
	t->hl_map = xcalloc(t->cap_hl, sizeof(*t->hl_map));
	t->root = node_new(t, true);
	t->root->priv->nlookup = 1;
	return t;
}

void itable_free(itable *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap_ino; i++) {
		struct inode *n = t->ino_map[i], *next;
		for (; n; n = next) {
			next = n->priv->hnext_ino;
			while (n->priv->names)
				link_drop(t, n->priv->names);
			node_destroy(n);
		}
	}
	free(t->ino_map);
	free(t->name_map);
	free(t->hl_map);
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
	struct name_link *l;
	struct inode *n = NULL;
	uint64_t ino;

	pthread_mutex_lock(&t->mu);
	if (!ino_find(t, parent)) {
		pthread_mutex_unlock(&t->mu);
		return 0;
	}
	l = name_find(t, parent, name);
	if (l) {
		n = l->node;
		/* another file now has this name: the old node loses it */
		if (n->is_dir != is_dir ||
		    (hl_len && n->priv->hlid &&
		     (n->priv->hlid_len != hl_len || memcmp(n->priv->hlid, hl, hl_len)))) {
			link_drop(t, l);
			node_maybe_free(t, n);
			n = NULL;
		}
	}
	if (!n && hl_len && (n = hl_find(t, hl, hl_len)) != NULL)
		link_add(t, n, parent, name);
	if (!n) {
		n = node_new(t, is_dir);
		link_add(t, n, parent, name);
	}
	if (hl_len)
		hl_set(t, n, hl, hl_len);
	n->priv->nlookup++;
	ino = n->ino;
	node_cache(n, e, cache_ns);
	pthread_mutex_unlock(&t->mu);
	return ino;
}

bool itable_ref(itable *t, uint64_t ino)
{
	struct inode *n;

	pthread_mutex_lock(&t->mu);
	n = ino_find(t, ino);
	if (n)
		n->priv->nlookup++;
	pthread_mutex_unlock(&t->mu);
	return n != NULL;
}

void itable_forget(itable *t, uint64_t ino, uint64_t nl)
{
	struct inode *n;

	pthread_mutex_lock(&t->mu);
	n = ino_find(t, ino);
	if (n && n != t->root) {
		n->priv->nlookup = nl >= n->priv->nlookup ? 0 : n->priv->nlookup - nl;
		node_maybe_free(t, n);
	}
	pthread_mutex_unlock(&t->mu);
}

struct inode *itable_get(itable *t, uint64_t ino)
{
	struct inode *n;

	pthread_mutex_lock(&t->mu);
	n = ino_find(t, ino);
	if (n)
		n->priv->refs++;
	pthread_mutex_unlock(&t->mu);
	return n;
}

void itable_put(itable *t, struct inode *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&t->mu);
	n->priv->refs--;
	node_maybe_free(t, n);
	pthread_mutex_unlock(&t->mu);
}

struct inode *itable_get_name(itable *t, uint64_t parent, const char *name)
{
	struct name_link *l;
	struct inode *n = NULL;

	pthread_mutex_lock(&t->mu);
	l = name_find(t, parent, name);
	if (l) {
		n = l->node;
		n->priv->refs++;
	}
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* Appends the path of n to out (root first). Caller holds t->mu. */
static bool path_of(itable *t, struct inode *n, buf *out)
{
	const char *comps[PATH_DEPTH_MAX];
	size_t depth = 0;

	while (n != t->root) {
		struct name_link *l = n->priv->names;
		if (!l || depth == PATH_DEPTH_MAX)
			return false;
		comps[depth++] = l->name;
		n = ino_find(t, l->parent);
		if (!n)
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
	struct inode *n;
	bool ok = false;
	buf b;

	buf_init(&b);
	pthread_mutex_lock(&t->mu);
	n = ino_find(t, ino);
	if (n)
		ok = path_of(t, n, &b);
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
		ino = l->node->ino;
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
		struct inode *n = l->node;
		link_drop(t, l);
		node_maybe_free(t, n);
	}
	pthread_mutex_unlock(&t->mu);
}

/* Moves l to (p, n) keeping its node. Caller holds t->mu. */
static void link_move(itable *t, struct name_link *l, uint64_t p, const char *name)
{
	name_map_remove(t, l);
	free(l->name);
	l->name = xstrdup(name);
	l->parent = p;
	name_map_insert(t, l);
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
		struct inode *na = a ? a->node : NULL, *nb = b ? b->node : NULL;
		if (a)
			link_drop(t, a);
		if (b)
			link_drop(t, b);
		if (na)
			link_add(t, na, p2, n2);
		if (nb)
			link_add(t, nb, p1, n1);
		goto out;
	}
	if (b) {
		struct inode *nb = b->node;
		link_drop(t, b);
		node_maybe_free(t, nb);
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

bool itable_known_absent(itable *t, uint64_t parent, const char *name)
{
	struct inode *p;
	bool r = false;

	pthread_mutex_lock(&t->mu);
	p = ino_find(t, parent);
	if (p && atomic_load(&p->dir_complete))
		r = !name_find(t, parent, name);
	pthread_mutex_unlock(&t->mu);
	return r;
}

void itable_set_hardlink(itable *t, uint64_t ino, const uint8_t *id, size_t len)
{
	struct inode *n;

	pthread_mutex_lock(&t->mu);
	n = ino_find(t, ino);
	if (n)
		hl_set(t, n, id, len);
	pthread_mutex_unlock(&t->mu);
}

uint64_t itable_parent(itable *t, uint64_t ino)
{
	struct inode *n;
	uint64_t p = ITABLE_ROOT;

	pthread_mutex_lock(&t->mu);
	n = ino_find(t, ino);
	if (n && n->priv->names)
		p = n->priv->names->parent;
	pthread_mutex_unlock(&t->mu);
	return p;
}

void itable_foreach(itable *t, void (*fn)(struct inode *n, void *arg), void *arg)
{
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->cap_ino; i++)
		for (struct inode *n = t->ino_map[i]; n; n = n->priv->hnext_ino)
			fn(n, arg);
	pthread_mutex_unlock(&t->mu);
}

size_t itable_count(itable *t)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	n = t->n_nodes;
	pthread_mutex_unlock(&t->mu);
	return n;
}
