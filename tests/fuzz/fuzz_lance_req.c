/*
 * Fuzzes what the Lance catalog reads from a request before it looks
 * anything up (catalog/lance_req.h, catalog/lance_id.h). The input is the
 * method, a NUL, the raw path, a NUL, the raw query (NULL when absent), a
 * NUL and the body (the rest, NULs and all). A parsed request has a known
 * route and id parts that are non-empty and hold no '$'; a refused one is
 * InvalidInput or Unsupported and says why. The path is also parsed as a
 * bare id with the method as the delimiter: an id parsed reads back the
 * same from its parts joined and percent-encoded.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/lance_req.h"
#include "lib/http_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every part of id is a non-empty name without '$' (nor delim, when given). */
static void parts_ok(const struct lance_id *id, const char *delim)
{
	if (id->n > LANCE_ID_PARTS_MAX)
		abort();
	for (size_t i = 0; i < id->n; i++)
		if (!*id->parts[i] || strchr(id->parts[i], '$') ||
		    (delim && *delim && strstr(id->parts[i], delim)))
			abort();
}

static void parsed(const struct lance_op *op)
{
	if (op->route > LR_RENAME || !op->what || op->limit > LANCE_PAGE_MAX ||
	    !*op->delim || !lance_delimiter_ok(op->delim))
		abort();
	if ((op->route == LR_TABLE_LIST_ALL) != !strcmp(op->what, "ListAllTables"))
		abort();
	if (op->route == LR_TABLE_LIST_ALL && op->id.n)
		abort(); /* ListAllTables has no id in its path */
	parts_ok(&op->id, op->delim);
	if (op->page_token && !*op->page_token)
		abort(); /* an empty token is none */
	if (op->mode > LM_OVERWRITE || op->drop_mode > LD_SKIP ||
	    (op->mode == LM_EXIST_OK && op->route != LR_NS_CREATE))
		abort();
	if (op->has_version ? op->version > INT64_MAX : op->version != 0)
		abort();
	if (!op->has_new_namespace && op->new_namespace.n)
		abort();
	for (size_t i = 0; i < op->new_namespace.n; i++)
		if (!*op->new_namespace.parts[i])
			abort();
	if (op->properties) {
		if (!jt_is(op->properties, JT_OBJ))
			abort();
		for (size_t i = 0; i < jt_len(op->properties); i++)
			if (!jt_is(jt_at(op->properties, i), JT_STR))
				abort();
	}
}

static void refused(const struct lance_refusal *r)
{
	if (r->code != LANCE_INVALID_INPUT && r->code != LANCE_UNSUPPORTED)
		abort();
	if (!memchr(r->detail, 0, sizeof(r->detail)) || !r->detail[0])
		abort(); /* a refusal always says why */
}

/* raw as an id split by delim; a parsed one round-trips through its encoding. */
static void fuzz_id(const char *raw, const char *delim)
{
	struct lance_id id = {0}, again = {0};
	char why[LANCE_WHY_MAX] = "";
	buf enc = BUF_INIT;
	char *joined;

	if (!lance_id_parse(raw, strlen(raw), delim, &id, why)) {
		if (id.n || !memchr(why, 0, sizeof(why)) || !why[0])
			abort();
		return;
	}
	if (!lance_delimiter_ok(delim))
		abort();
	parts_ok(&id, delim);
	joined = lance_id_join(&id, 0, delim);
	url_encode_path(joined, &enc);
	buf_append_byte(&enc, '\0');
	if (!lance_id_parse(enc.data, strlen(enc.data), delim, &again, why) ||
	    !lance_id_equal(&id, &again))
		abort();
	free(joined);
	buf_free(&enc);
	lance_id_free(&again);
	lance_id_free(&id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 3), *path, *query = NULL;
	const char *body = "";
	size_t body_len = 0;
	struct lance_op op;
	struct lance_refusal r;

	memcpy(in, data, size);
	in[size] = in[size + 1] = in[size + 2] = '\0';
	/* the fields after the method; one the input does not reach is empty */
	path = in + strlen(in) + 1;
	if (path > in + size)
		path = in + size;
	if (path + strlen(path) < in + size) {
		query = path + strlen(path) + 1;
		if (query + strlen(query) < in + size) {
			body = query + strlen(query) + 1;
			body_len = (size_t)(in + size - body);
		}
	}
	if (lance_parse(in, path, query, body, body_len, &op, &r))
		parsed(&op);
	else
		refused(&r);
	lance_op_free(&op);
	fuzz_id(path, in);
	free(in);
	return 0;
}
