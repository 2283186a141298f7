/*
 * Fuzzes the Iceberg metadata engine. The input is table metadata JSON and,
 * after a NUL, a commit body (CommitTableRequest). An empty metadata part
 * stands for a small valid v2 table, so most inputs reach the updates. Any
 * input is applied or refused with a message; whatever the engine produces
 * (a created table, a committed version) must read back as valid metadata
 * equal to itself, and a refused commit must leave the metadata unchanged.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/iceberg_meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base_v2[] =
	"{\"format-version\":2,\"table-uuid\":\"u\",\"location\":\"s3://w/t\","
	"\"last-sequence-number\":1,\"last-updated-ms\":1,\"last-column-id\":2,"
	"\"current-schema-id\":0,\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
	"{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"long\"},{\"id\":2,\"name\":\"b\","
	"\"required\":false,\"type\":\"string\"}]}],\"default-spec-id\":0,\"partition-specs\":["
	"{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"b\","
	"\"transform\":\"identity\"}]}],\"last-partition-id\":1000,\"default-sort-order-id\":0,"
	"\"sort-orders\":[{\"order-id\":0,\"fields\":[]}],\"properties\":{},"
	"\"current-snapshot-id\":7,\"refs\":{\"main\":{\"snapshot-id\":7,\"type\":\"branch\"}},"
	"\"snapshots\":[{\"snapshot-id\":7,\"sequence-number\":1,\"timestamp-ms\":1,"
	"\"manifest-list\":\"s3://w/t/m.avro\",\"summary\":{\"operation\":\"append\"}}],"
	"\"snapshot-log\":[{\"timestamp-ms\":1,\"snapshot-id\":7}],\"metadata-log\":[]}";

static void refused(ice_rc rc, const char *msg)
{
	if (rc != ICE_CONFLICT && rc != ICE_BAD)
		abort();
	if (!memchr(msg, 0, 256) || !msg[0])
		abort(); /* a refusal always says why */
}

/* Output of the engine reads back valid and equal. */
static void reads_back(const jt *m)
{
	buf b = BUF_INIT;
	char msg[256];
	jt *back;
	ice_meta_write(m, &b);
	back = ice_meta_parse(b.data, b.len, msg, sizeof(msg));
	if (!back || !jt_equal(back, m))
		abort();
	jt_free(back);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t len = nul ? (size_t)(nul - data) : size;
	size_t mlen = len ? len : sizeof(base_v2) - 1;
	const char *mtext = len ? (const char *)data : base_v2;
	char msg[256];
	jt *meta, *body = NULL, *created = NULL, *before;
	ice_rc rc;

	memset(msg, 'x', sizeof(msg));
	meta = ice_meta_parse(mtext, mlen, msg, sizeof(msg));
	if (!meta) {
		refused(ICE_BAD, msg);
		/* Not metadata: maybe a CreateTableRequest. */
		body = jt_parse(mtext, mlen, msg, sizeof(msg));
		memset(msg, 'x', sizeof(msg));
		rc = ice_meta_create(body, "uuid", "s3://w/t", 5, &created, msg, sizeof(msg));
		if (rc == ICE_OK)
			reads_back(created);
		else if (created)
			abort();
		else
			refused(rc, msg);
		jt_free(created);
		jt_free(body);
		if (nul)
			meta = NULL; /* and the commit goes to "no table yet" */
		else
			return 0;
	}
	if (nul)
		body = jt_parse((const char *)nul + 1, size - len - 1, msg, sizeof(msg));
	if (!nul || !body) {
		jt_free(meta);
		return 0;
	}
	before = jt_copy(meta);
	memset(msg, 'x', sizeof(msg));
	rc = ice_commit(&meta, body, meta ? "s3://w/t/metadata/00001-u.metadata.json" : NULL, 9,
			msg, sizeof(msg));
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
