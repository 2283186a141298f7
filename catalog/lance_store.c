/* The Lance catalog's storage: see lance_store.h. */
#include "config.h"
#include "catalog/lance_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/table_store.h"
#include "client/filer_meta.h"
#include "lib/util.h"

#define V2_DIGITS     20
#define MANIFEST      ".manifest"
#define VERSIONS_PAGE 1000

bool lance_manifest_version(const char *name, uint64_t *v)
{
	size_t len = strlen(name), digits = len > strlen(MANIFEST) ? len - strlen(MANIFEST) : 0;
	char num[V2_DIGITS + 1];
	uint64_t n;

	if (!digits || digits > V2_DIGITS || strcmp(name + digits, MANIFEST))
		return false;
	memcpy(num, name, digits);
	num[digits] = '\0';
	if (strspn(num, "0123456789") != digits || !parse_u64(num, &n))
		return false;
	/* V1 names are unpadded decimals and could only reach 20 digits past
	   10^19 versions: a 20-digit name is V2's inverted one */
	*v = digits == V2_DIGITS ? UINT64_MAX - n : n;
	return true;
}

/* The filer path of the dataset's _versions/ (caller frees); NULL for a bad location. */
static char *versions_dir(const char *location)
{
	char *dir = ts_location_dir(location), *p;
	if (!dir)
		return NULL;
	p = xasprintf("%s/_versions", dir);
	free(dir);
	return p;
}

wfs_err lance_latest_version(filer_rpc *r, const char *location, uint64_t *latest, bool *any)
{
	char *dir = versions_dir(location), *from = xstrdup("");
	bool more = true;
	wfs_err err = dir ? WFS_OK : WFS_EINVAL;

	*any = false;
	*latest = 0;
	while (!err && more) {
		struct filer_meta_page p = {0};
		err = filer_meta_list(r, dir, from, VERSIONS_PAGE, &p);
		more = !err && p.more && p.n;
		for (size_t i = 0; !err && i < p.n; i++) {
			const char *name = p.entries[i]->name;
			uint64_t v;
			if (!lance_manifest_version(name, &v))
				continue;
			if (!*any || v > *latest)
				*latest = v;
			*any = true;
			/* V2 names sort newest first: the first one is the answer */
			if (strlen(name) == V2_DIGITS + strlen(MANIFEST))
				more = false;
		}
		free(from);
		from = xstrdup(p.n ? p.entries[p.n - 1]->name : "");
		filer_meta_page_free(&p);
	}
	free(from);
	free(dir);
	return err == WFS_ENOENT ? WFS_OK : err; /* no _versions/: no version */
}

wfs_err lance_version_exists(filer_rpc *r, const char *location, uint64_t v, bool *yes)
{
	char *dir = versions_dir(location);
	wfs_err err = WFS_ENOENT;

	*yes = false;
	if (!dir)
		return WFS_EINVAL;
	for (int naming = 1; naming <= 2 && err == WFS_ENOENT; naming++) {
		struct filer_entry *e = NULL;
		char *path = naming == 1 ? xasprintf("%s/%llu" MANIFEST, dir, (unsigned long long)v)
					 : xasprintf("%s/%020llu" MANIFEST, dir,
						     (unsigned long long)(UINT64_MAX - v));
		err = filer_meta_lookup(r, path, &e);
		filer_entry_free(e);
		free(path);
	}
	free(dir);
	*yes = !err;
	return err == WFS_ENOENT ? WFS_OK : err;
}

wfs_err lance_state_set(filer_rpc *r, const char *path, const char *state)
{
	return filer_meta_set_xattr(r, path, TS_XATTR_LANCE, state, strlen(state), FM_XATTR_ANY);
}

wfs_err lance_marker(table_files *f, const char *location, const char *marker, bool present)
{
	size_t n = strlen(location);
	char *file = xasprintf("%s%s%s", location, n && location[n - 1] == '/' ? "" : "/", marker);
	wfs_err err = present ? tf_put(f, file, "", 0) : tf_delete(f, file, false);
	free(file);
	return err;
}
