/*
 * The Lance Namespace REST requests the catalog serves (docs/catalog.md,
 * "Lance"), parsed: the route, the object's id and every parameter of the
 * query and the JSON body, checked before anything is looked up. Pure (no
 * filer), so it is fuzzed on its own.
 */
#ifndef WEEDFS_CATALOG_LANCE_REQ_H
#define WEEDFS_CATALOG_LANCE_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "catalog/lance_id.h"
#include "lib/jtree.h"

/* The spec's error codes (ErrorResponse.code) the catalog answers. */
enum lance_code {
	LANCE_UNSUPPORTED = 0,
	LANCE_NAMESPACE_NOT_FOUND = 1,
	LANCE_NAMESPACE_EXISTS = 2,
	LANCE_NAMESPACE_NOT_EMPTY = 3,
	LANCE_TABLE_NOT_FOUND = 4,
	LANCE_TABLE_EXISTS = 5,
	LANCE_TABLE_VERSION_NOT_FOUND = 11,
	LANCE_INVALID_INPUT = 13,
	LANCE_CONCURRENT_MODIFICATION = 14,
	LANCE_PERMISSION_DENIED = 15,
	LANCE_UNAUTHENTICATED = 16,
	LANCE_SERVICE_UNAVAILABLE = 17,
	LANCE_INTERNAL = 18,
};
/* The HTTP status of a code, as the spec maps them (Unsupported: 406). */
int lance_code_status(enum lance_code code);
/* The code's name ("TableNotFound"). */
const char *lance_code_name(enum lance_code code);

enum lance_route {
	LR_NS_CREATE,
	LR_NS_LIST,
	LR_NS_DESCRIBE,
	LR_NS_DROP,
	LR_NS_EXISTS,
	LR_TABLE_LIST,     /* GET /v1/namespace/{id}/table/list */
	LR_TABLE_LIST_ALL, /* GET /v1/table */
	LR_DECLARE,
	LR_DESCRIBE,
	LR_EXISTS,
	LR_REGISTER,
	LR_DEREGISTER,
	LR_DROP,
	LR_RENAME,
};

/* CreateNamespace's and RegisterTable's mode; DropNamespace's mode and behavior. */
enum lance_mode { LM_CREATE, LM_EXIST_OK, LM_OVERWRITE };
enum lance_drop_mode { LD_FAIL, LD_SKIP };

#define LANCE_PAGE_MAX 1000 /* the most items of one list answer */

struct lance_op {
	enum lance_route route;
	const char *what; /* the operation's name, "DescribeTable" */
	struct lance_id id;
	char delim[LANCE_DELIM_MAX + 1];
	/* lists */
	char *page_token; /* NULL: from the start */
	size_t limit;     /* 0..LANCE_PAGE_MAX */
	bool include_declared;
	/* namespace create and drop, table register */
	enum lance_mode mode;
	enum lance_drop_mode drop_mode;
	bool cascade;
	/* tables */
	char *location; /* declare, register; NULL: none given */
	bool vend_credentials, with_table_uri, load_detailed_metadata, check_declared;
	bool has_version;
	uint64_t version;
	jt *properties; /* an object of strings, NULL: none given */
	char *new_table_name;
	struct lance_id new_namespace;
	bool has_new_namespace;
};
void lance_op_free(struct lance_op *op);

/* Why a request cannot be served: an error code and a sentence. */
struct lance_refusal {
	enum lance_code code;
	char detail[256];
};

/*
 * Parses a request (raw_path and raw_query as received, percent-encoded;
 * body may be empty for a GET) into op. false with r when the route is not
 * one the catalog serves (LANCE_UNSUPPORTED for the spec's other operations)
 * or its input is malformed (LANCE_INVALID_INPUT): an id in the body that
 * is not the path's, an unknown mode, a property that is no string, ...
 */
bool lance_parse(const char *method, const char *raw_path, const char *raw_query,
		 const char *body, size_t body_len, struct lance_op *op, struct lance_refusal *r);

#endif
