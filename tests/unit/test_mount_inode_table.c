/* The mount's inode table: numbering, names, hard links, forget, rename, paths. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "mount/inode_table.h"
#include "tap.h"

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
	return done_testing();
}
