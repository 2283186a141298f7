/*
 * For store backends only: the operations table behind struct filer_store.
 * store.c validates arguments (names, limits, sizes) before calling a backend,
 * so backends may assume them bounded.
 */
#ifndef WEEDFS_FILER_STORE_IMPL_H
#define WEEDFS_FILER_STORE_IMPL_H

#include "filer/store.h"

struct filer_store_ops {
	const char *name;
	/* Opens the store; dsn is what follows the backend's scheme selection in store.c. */
	wfs_err (*open)(const char *dsn, struct filer_store **out);
	void (*close)(struct filer_store *s);
	wfs_err (*begin)(struct filer_store *s, struct filer_tx **tx);
	wfs_err (*commit)(struct filer_tx *tx);
	void (*rollback)(struct filer_tx *tx);
	/* blob: the encoded entry. */
	wfs_err (*insert)(struct filer_store *s, struct filer_tx *tx, const char *dir,
			  const char *name, const void *blob, size_t len);
	wfs_err (*update)(struct filer_store *s, struct filer_tx *tx, const char *dir,
			  const char *name, const void *blob, size_t len);
	wfs_err (*find)(struct filer_store *s, struct filer_tx *tx, const char *dir,
			const char *name, struct filer_entry **out);
	wfs_err (*del)(struct filer_store *s, struct filer_tx *tx, const char *dir,
		       const char *name);
	wfs_err (*delete_children)(struct filer_store *s, struct filer_tx *tx, const char *dir,
				   uint64_t *deleted);
	/* lo: first name (inclusive if lo_incl; NULL = none); hi: exclusive bound or NULL. */
	wfs_err (*list)(struct filer_store *s, struct filer_tx *tx, const char *dir, const char *lo,
			bool lo_incl, const char *hi, const char *prefix, size_t limit,
			filer_list_fn fn, void *ctx, size_t *count);
	wfs_err (*kv_put)(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			  const void *val, size_t vlen);
	wfs_err (*kv_get)(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			  void **val, size_t *vlen);
	wfs_err (*kv_delete)(struct filer_store *s, struct filer_tx *tx, const void *key,
			     size_t klen);
};

/* Every backend's store and transaction begin with these. */
struct filer_store {
	const struct filer_store_ops *ops;
};

struct filer_tx {
	struct filer_store *store;
};

extern const struct filer_store_ops filer_store_sqlite_ops;
extern const struct filer_store_ops filer_store_postgres_ops;

#endif
