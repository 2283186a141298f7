/*
 * Fuzzes the Iceberg view metadata engine. The input is view metadata JSON
 * and, after a NUL, a commit body (CommitViewRequest). An empty metadata part
 * stands for a small valid view, so most inputs reach the updates; metadata
 * that does not read as a view is tried as a CreateViewRequest. Whatever the
 * engine produces (a created view, a committed version) must read back as
 * valid metadata equal to itself, and a refused commit must leave the
 * metadata unchanged and say why.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/iceberg_view_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base_view[] =
	"{\"view-uuid\":\"u\",\"format-version\":1,\"location\":\"s3://w/v\",\"schemas\":["
	"{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"a\","
	"\"required\":false,\"type\":\"long\"}]}],\"current-version-id\":1,\"versions\":["
	"{\"version-id\":1,\"timestamp-ms\":1,\"schema-id\":0,\"summary\":{\"engine-name\":"
	"\"spark\"},\"representations\":[{\"type\":\"sql\",\"sql\":\"SELECT a FROM t\","
	"\"dialect\":\"spark\"}],\"default-namespace\":[\"db\"]}],\"version-log\":["
	"{\"timestamp-ms\":1,\"version-id\":1}],\"properties\":{}}";

static void refused(ice_rc rc, const char *msg)
{
	if (rc != ICE_CONFLICT && rc != ICE_BAD)
		abort();
	if (!memchr(msg, 0, 256) || !msg[0])
		abort(); /* a refusal always says why */
}

/* Output of the engine reads back valid and equal, and names its file. */
static void reads_back(const jt *m)
{
	buf b = BUF_INIT;
	char msg[256];
	char *name;
	jt *back;
	ice_view_write(m, &b);
	back = ice_view_parse(b.data, b.len, msg, sizeof(msg));
	if (!back || !jt_equal(back, m))
		abort();
	name = ice_view_file_name(m, 2, "u");
	if (!name || ice_meta_file_version(name) != 2)
		abort();
	free(name);
	jt_free(back);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size;
	size_t mlen = len ? len : sizeof(base_view) - 1;
	const char *mtext = len ? (const char *)data : base_view;
	char msg[256];
	jt *meta, *body, *created = NULL, *before;
	ice_rc rc;

	memset(msg, 'x', sizeof(msg));
	meta = ice_view_parse(mtext, mlen, msg, sizeof(msg));
	if (!meta) {
		refused(ICE_BAD, msg);
		/* Not view metadata: maybe a CreateViewRequest. */
		body = jt_parse(mtext, mlen, msg, sizeof(msg));
		memset(msg, 'x', sizeof(msg));
		rc = ice_view_create(body, "uuid", "s3://w/v", 5, &created, msg, sizeof(msg));
		if (rc == ICE_OK)
			reads_back(created);
		else if (created)
			abort();
		else
			refused(rc, msg);
		jt_free(body);
		if (!created)
			return 0;
		meta = created; /* and the commit goes to the new view */
	}
	body = nul ? jt_parse((const char *)nul + 1, size - len - 1, msg, sizeof(msg)) : NULL;
	if (!body) {
		jt_free(meta);
		return 0;
	}
	before = jt_copy(meta);
	memset(msg, 'x', sizeof(msg));
	rc = ice_view_commit(&meta, body, 9, msg, sizeof(msg));
	if (rc == ICE_OK) {
		reads_back(meta);
	} else {
		refused(rc, msg);
		if (!jt_equal(before, meta))
			abort(); /* a refused commit changes nothing */
	}
	jt_free(before);
	jt_free(meta);
	jt_free(body);
	return 0;
}
