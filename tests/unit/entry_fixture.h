/* An entry with every field set, shared by the tests of its codecs (binary and JSON). */
#ifndef WEEDFS_TESTS_ENTRY_FIXTURE_H
#define WEEDFS_TESTS_ENTRY_FIXTURE_H

#include <string.h>
#include <sys/stat.h>
#include "client/entry.h"
#include "util.h"

static struct filer_entry *full_entry(void)
{
	struct filer_entry *e = filer_entry_new("/dir/sub", "file.bin");
	static const uint8_t bin[] = {0, 1, 2, 0xff, 0};
	e->attr.mode = S_IFREG | 0640;
	e->attr.uid = 1000;
	e->attr.gid = 100;
	e->attr.size = 123456789012ull;
	e->attr.mtime_ns = 1700000000123456789ll;
	e->attr.ctime_ns = -5; /* before the epoch */
	e->attr.crtime_ns = 1600000000000000000ll;
	e->attr.nlink = 3;
	e->attr.rdev = 0x0801;
	e->attr.ttl_sec = 86400;
	e->attr.mime = xstrdup("application/octet-stream");
	e->attr.collection = xstrdup("photos");
	e->attr.replication = xstrdup("001");
	e->attr.symlink_target = xstrdup("../target");
	e->attr.hard_link_id = xmalloc(16);
	memcpy(e->attr.hard_link_id, "0123456789abcdef", 16);
	e->attr.hard_link_id_len = 16;
	filer_entry_xattr_set(e, "user.z", "zz", 2);
	filer_entry_xattr_set(e, "Seaweed-X-Amz-Meta-A", bin, sizeof(bin));
	filer_entry_xattr_set(e, "user.empty", NULL, 0);
	filer_entry_set_content(e, "hello", 5);
	filer_entry_add_chunk(e, "3,01637037d6", 0, 1024, 100, "etag-1", false);
	filer_entry_add_chunk(e, "4,0a1b2c3d4e", 512, 4096, 200, NULL, false);
	filer_entry_add_chunk(e, "5,ff00ff00ff", 0, 1ull << 40, 300, "m", true);
	return e;
}

#endif
