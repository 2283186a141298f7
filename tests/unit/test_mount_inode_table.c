/*
 * The mount's inode table: numbering, names, hard links, forget, rename,
 * paths, cached attributes kept while no caller holds a node, and the memory
 * a million cached inodes cost (mallinfo2) and give back after forget.
 */
#include "config.h"
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "mount/inode_table.h"
#include "tap.h"

/* ASan's and TSan's allocators keep freed memory: the byte counts below are glibc's */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZER_ALLOCATOR 1
#endif
#endif

static struct filer_entry *ent(const char *name, unsigned mode, const char *hl)
{
	struct filer_entry *e = filer_entry_new("/x", name);

	e->attr.mode = mode;
	e->attr.nlink = 1;
	if (hl) {
		e->attr.hard_link_id_len = strlen(hl);
		e->attr.hard_link_id = (uint8_t *)strdup(hl);
	}
	return e;
}

static uint64_t learn(itable *t, uint64_t parent, const char *name, unsigned mode, const char *hl)
{
	struct filer_entry *e = ent(name, mode, hl);
	uint64_t ino = itable_learn(t, parent, name, e, 1000000000ull);

	filer_entry_free(e);
	return ino;
}

static void check_path(itable *t, uint64_t ino, const char *want, const char *what)
{
	char *p = itable_path(t, ino);

	is_str(p ? p : "(null)", want, what);
	free(p);
}

static void count_node(struct inode *n, void *arg)
{
	(void)n;
	++*(size_t *)arg;
}

/* The cached attributes outlive the struct inode: stored in the record, back on the next get. */
static void test_cached_fields(void)
{
	itable *t = itable_new("/");
	struct filer_entry *e = filer_entry_new("/", "l");
	struct filer_entry *c;
	struct itable_stats st;
	struct inode *n;
	uint64_t l, f, d;

	e->attr.mode = S_IFLNK | 0777;
	e->attr.uid = 1001;
	e->attr.gid = 1002;
	e->attr.size = 6;
	e->attr.mtime_ns = 111;
	e->attr.ctime_ns = 222;
	e->attr.atime_ns = 333;
	e->attr.nlink = 1;
	e->attr.inode = 4444;
	e->attr.mime = strdup("text/plain");
	e->attr.symlink_target = strdup("target");
	filer_entry_xattr_set(e, "user.a", "va", 2);
	filer_entry_xattr_set(e, "user.b", "", 0);
	filer_entry_add_chunk(e, "3,01637037d6", 0, 6, 1, NULL, false);
	l = itable_learn(t, ITABLE_ROOT, "l", e, 1000000000ull);
	filer_entry_free(e);
	itable_get_stats(t, &st);
	is_int(st.in_use, 0, "a learned node is a record only (no struct inode)");
	is_int(st.nodes, 2, "root and the link");

	n = itable_get(t, l);
	ok(n && n->cached, "get: the cached entry is back");
	is_int(n->attr.mode, S_IFLNK | 0777, "mode kept");
	is_int(n->attr.uid, 1001, "uid kept");
	is_int(n->attr.gid, 1002, "gid kept");
	is_int((long long)n->attr.size, 6, "size kept");
	is_int(n->attr.mtime_ns, 111, "mtime kept");
	is_int(n->attr.ctime_ns, 222, "ctime kept");
	is_int(n->attr.atime_ns, 333, "atime kept");
	is_int(n->attr.filer_ino, 4444, "the filer's inode number kept");
	ok(n->cached_until > n->cached_at, "the cache time kept");
	pthread_mutex_lock(&n->mu);
	c = itable_cached_entry(n);
	pthread_mutex_unlock(&n->mu);
	is_int(c->attr.inode, 4444, "the cached entry has the inode number");
	/* an entry without a number (built by the mount) keeps the node's */
	c->attr.inode = 0;
	itable_cache(n, c, 1000000000ull);
	is_int(n->attr.filer_ino, 4444, "an entry without a number keeps the known one");
	is_str(c->attr.symlink_target, "target", "the symlink target kept");
	is_int(c->n_xattrs, 2, "both xattrs kept");
	ok(filer_entry_xattr_get(c, "user.a") &&
		   filer_entry_xattr_get(c, "user.a")->value_len == 2 &&
		   !memcmp(filer_entry_xattr_get(c, "user.a")->value, "va", 2),
	   "an xattr's value kept");
	ok(c->n_chunks == 0 && !c->has_content && !c->attr.mime, "no chunks, content or mime");
	filer_entry_free(c);
	itable_get_stats(t, &st);
	is_int(st.in_use, 1, "a held node has its struct inode");
	/* fields the mount changes on the node survive the put */
	pthread_mutex_lock(&n->mu);
	n->kc_sig = 77;
	n->kc_chunks_sig = 78;
	n->removed = true;
	n->attr.mtime_ns = 999;
	pthread_mutex_unlock(&n->mu);
	itable_put(t, n);
	itable_get_stats(t, &st);
	is_int(st.in_use, 0, "released: back to a record");
	n = itable_get(t, l);
	ok(n->kc_sig == 77 && n->kc_chunks_sig == 78 && n->removed && n->attr.mtime_ns == 999,
	   "signatures, removed and a touched time kept across put/get");
	/* a node with pending state keeps its struct inode while unreferenced */
	pthread_mutex_lock(&n->mu);
	n->atime_pending_ns = 5;
	pthread_mutex_unlock(&n->mu);
	itable_put(t, n);
	itable_get_stats(t, &st);
	is_int(st.in_use, 1, "a pending atime keeps the struct inode");
	n = itable_get(t, l);
	is_int(n->atime_pending_ns, 5, "the same node with its pending atime");
	n->atime_pending_ns = 0;
	itable_put(t, n);

	/* uncache_all reaches records and held nodes */
	f = learn(t, ITABLE_ROOT, "f", S_IFREG | 0644, NULL);
	d = learn(t, ITABLE_ROOT, "d", S_IFDIR | 0755, NULL);
	n = itable_get(t, d);
	atomic_store(&n->dir_complete, true);
	ok(itable_known_absent(t, d, "nope"), "a complete directory knows a name is absent");
	itable_put(t, n);
	ok(itable_known_absent(t, d, "nope"), "dir_complete kept in the record");
	struct inode *held = itable_get(t, f);
	itable_uncache_all(t);
	ok(held->cached_until == 0, "uncache_all: a held node is stale");
	n = itable_get(t, l);
	ok(n->cached_until == 0 && n->cached, "uncache_all: a record is stale, still a hint");
	itable_put(t, n);
	itable_put(t, held);

	/* foreach sees nodes in use only */
	size_t seen = 0;
	held = itable_get(t, f);
	itable_foreach(t, count_node, &seen);
	is_int(seen, 1, "foreach visits the one node in use");
	itable_put(t, held);

	/* a rename to a longer name keeps the first name first */
	learn(t, ITABLE_ROOT, "x", S_IFREG | 0644, "HL");
	learn(t, d, "y", S_IFREG | 0644, "HL");
	itable_rename(t, ITABLE_ROOT, "x", ITABLE_ROOT, "a-much-longer-name-than-before", false);
	check_path(t, itable_resolve(t, "/d/y"), "/a-much-longer-name-than-before",
		   "renamed first name still gives the path");
	itable_free(t);
}

static long vm_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/*
 * A tree walk's worth of plain files with short names (1,000 a directory):
 * the bytes each cached inode costs (glibc's count of allocated bytes, hash
 * buckets included), and that forgetting them all gives the memory back.
 * ITABLE_FILES overrides the count (1,000,000; 100,000 under ASan, whose
 * allocator glibc's counters do not see).
 */
static void test_memory(void)
{
#ifdef SANITIZER_ALLOCATOR
	size_t files = 100000;
#else
	size_t files = 1000000;
#endif
	const char *env = getenv("ITABLE_FILES");
	size_t per_dir = 1000, n_dirs, nodes;
	struct filer_entry *e = filer_entry_new("/d", "f");
	struct mallinfo2 m0, m1, m2;
	struct itable_stats st;
	long rss0, rss1, rss2;
	uint64_t *inos, dir = 0;
	double per;
	char name[32];
	itable *t;

	if (env && atol(env) > 0)
		files = (size_t)atol(env);
	n_dirs = (files + per_dir - 1) / per_dir;
	inos = calloc(files + n_dirs, sizeof(*inos));
	malloc_trim(0);
	t = itable_new("/");
	m0 = mallinfo2();
	rss0 = vm_rss_kb();
	e->attr.nlink = 1;
	e->attr.uid = e->attr.gid = 1000;
	for (size_t i = 0, d = 0; i < files; i++) {
		if (i % per_dir == 0) {
			snprintf(name, sizeof(name), "dir%05zu", d);
			e->attr.mode = S_IFDIR | 0755;
			dir = inos[files + d++] =
				itable_learn(t, ITABLE_ROOT, name, e, 1000000000ull);
		}
		snprintf(name, sizeof(name), "file.%zu", i % per_dir);
		e->attr.mode = S_IFREG | 0644;
		e->attr.size = i;
		e->attr.mtime_ns = e->attr.ctime_ns = (int64_t)i * 1000;
		inos[i] = itable_learn(t, dir, name, e, 1000000000ull);
	}
	nodes = files + n_dirs;
	m1 = mallinfo2();
	rss1 = vm_rss_kb();
	is_int(itable_count(t), nodes + 1, "every file and directory is in the table");
	per = ((double)(m1.uordblks + m1.hblkhd) - (double)(m0.uordblks + m0.hblkhd)) /
	      (double)nodes;
	printf("# %zu cached inodes: %.0f bytes each (mallinfo2), VmRSS +%ld kB (%.0f B each)\n",
	       nodes, per, rss1 - rss0, (double)(rss1 - rss0) * 1024 / (double)nodes);
#ifndef SANITIZER_ALLOCATOR
	ok(per <= 300, "a cached plain file with a short name costs at most 300 bytes (%.0f)", per);
#endif
	for (size_t i = 0; i < nodes; i++)
		itable_forget(t, inos[i], 1);
	itable_get_stats(t, &st);
	is_int(st.nodes, 1, "all forgotten: the root is left");
	ok(st.trims >= (files >= 100000 ? 2u : 0u), "forgets gave memory back (%zu trims)",
	   st.trims);
	malloc_trim(0); /* the tail below the trim mark, as the next forgets would */
	m2 = mallinfo2();
	rss2 = vm_rss_kb();
	printf("# after forget: VmRSS %ld kB (%ld before, %ld at the peak)\n", rss2, rss0, rss1);
#ifndef SANITIZER_ALLOCATOR
	ok(m2.uordblks + m2.hblkhd <= m0.uordblks + m0.hblkhd + (256u << 10),
	   "forgotten nodes leave nothing allocated");
	ok(rss2 - rss0 < (rss1 - rss0) / 4, "the resident size falls back after forget");
#endif
	(void)m2;
	(void)rss2;
	itable_free(t);
	filer_entry_free(e);
	free(inos);
}

int main(void)
{
	itable *t = itable_new("/mnt/root");
	uint64_t d, f, g, d2, f2, h1, h2, x;
	struct inode *n;

	check_path(t, ITABLE_ROOT, "/mnt/root", "root path is -filer.path");
	d = learn(t, ITABLE_ROOT, "d", S_IFDIR | 0755, NULL);
	ok(d > ITABLE_ROOT, "a new directory gets a new ino");
	f = learn(t, d, "f", S_IFREG | 0644, NULL);
	ok(f != d && f > d, "inos grow");
	is_int(learn(t, d, "f", S_IFREG | 0644, NULL), f, "a known name keeps its ino");
	check_path(t, f, "/mnt/root/d/f", "path of a nested file");
	is_int(itable_resolve(t, "/mnt/root/d/f"), f, "resolve a full path");
	is_int(itable_resolve(t, "/mnt/root/d"), d, "resolve a directory");
	is_int(itable_resolve(t, "/mnt/root"), ITABLE_ROOT, "resolve the root");
	is_int(itable_resolve(t, "/mnt/rootx/d"), 0, "a path outside the root");
	is_int(itable_resolve(t, "/mnt/root/d/nope"), 0, "an unknown name");
	is_int(learn(t, 999, "x", S_IFREG, NULL), 0, "unknown parent");

	/* hard links share one node, found through the id */
	h1 = learn(t, d, "a", S_IFREG | 0644, "ID-1");
	h2 = learn(t, ITABLE_ROOT, "b", S_IFREG | 0644, "ID-1");
	is_int(h2, h1, "two names of one hard-linked file share the ino");
	x = learn(t, d, "c", S_IFREG | 0644, "ID-2");
	ok(x != h1, "another link group gets another ino");
	itable_set_hardlink(t, f, (const uint8_t *)"ID-3", 4);
	is_int(learn(t, ITABLE_ROOT, "f-link", S_IFREG | 0644, "ID-3"), f,
	       "a name learned after link() maps to the linked node");

	/* rename of a directory moves everything below it */
	itable_rename(t, ITABLE_ROOT, "d", ITABLE_ROOT, "e", false);
	check_path(t, f, "/mnt/root/e/f", "child path follows a directory rename");
	is_int(itable_resolve(t, "/mnt/root/d/f"), 0, "the old path is gone");
	/* rename over an existing name drops the target's name */
	g = learn(t, ITABLE_ROOT, "g", S_IFREG | 0644, NULL);
	itable_rename(t, d, "c", ITABLE_ROOT, "g", false);
	is_int(itable_resolve(t, "/mnt/root/g"), x, "the moved node holds the name");
	n = itable_get_name(t, ITABLE_ROOT, "g");
	ok(n && n->ino == x, "get_name after rename");
	itable_put(t, n);
	check_path(t, g, "(null)", "the replaced node has no path");
	/* exchange swaps */
	d2 = learn(t, ITABLE_ROOT, "p", S_IFDIR | 0755, NULL);
	f2 = learn(t, ITABLE_ROOT, "q", S_IFREG | 0644, NULL);
	itable_rename(t, ITABLE_ROOT, "p", ITABLE_ROOT, "q", true);
	is_int(itable_resolve(t, "/mnt/root/q"), d2, "exchange: p's node at q");
	is_int(itable_resolve(t, "/mnt/root/p"), f2, "exchange: q's node at p");

	/* a name whose type changed is a new node */
	is_int(learn(t, ITABLE_ROOT, "p", S_IFDIR | 0755, NULL) != f2, 1,
	       "a directory now where a file was gets a new ino");

	/* forget: the node goes once the kernel forgets it; the name then gets a new ino */
	n = itable_get(t, x);
	ok(n != NULL, "get a known ino");
	itable_forget(t, x, 1);
	ok(itable_get(t, x) == n, "a caller reference keeps the node");
	itable_put(t, n); /* the get just above */
	itable_put(t, n);
	ok(itable_get(t, x) == NULL, "forgotten and released: gone");
	uint64_t again = learn(t, ITABLE_ROOT, "g", S_IFREG | 0644, NULL);
	ok(again != x && again > d2, "an ino is never reused");
	itable_forget(t, ITABLE_ROOT, 100);
	ok(itable_get(t, ITABLE_ROOT) != NULL, "the root is never forgotten");
	itable_put(t, itable_get(t, ITABLE_ROOT));

	/* unlink drops one name only */
	itable_unlink(t, ITABLE_ROOT, "b");
	check_path(t, h1, "/mnt/root/e/a", "the other name of a link stays");
	is_int(itable_parent(t, f), d, "parent of the first name");

	itable_free(t);

	/* a "/" root joins without a doubled slash */
	t = itable_new("/");
	d = learn(t, ITABLE_ROOT, "top", S_IFDIR | 0755, NULL);
	check_path(t, d, "/top", "child of /");
	char *cp = itable_child_path(t, ITABLE_ROOT, "z");
	is_str(cp, "/z", "child_path of /");
	free(cp);
	is_int(itable_resolve(t, "/top"), d, "resolve under /");
	itable_free(t);

	test_cached_fields();
	test_memory();
	return done_testing();
}
