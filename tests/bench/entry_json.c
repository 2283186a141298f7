/*
 * The entry JSON codec's rate (client/entry_json.h), the cost every create
 * and every JSON answer or event pays: for a typical file entry (an S3
 * object's attributes and two xattrs) with 1 and with 100 chunks, entries/s
 * of the filer's answer form (entry_json) written and read back
 * (json_parse + filer_meta_entry_from_json), and of create's request written
 * (filer_meta_create_body, as the gateway sends it) and parsed by the filer
 * (api_req_parse). One thread; each figure is measured for SECONDS of the
 * thread's CPU time (so other work on the machine does not count).
 *
 * Usage: entry_json [SECONDS]   (default 1)
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "client/entry_json.h"
#include "client/filer_meta.h"
#include "filer/filer_api_parse.h"
#include "json.h"
#include "log.h"
#include "util.h"

static double seconds = 1;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct filer_entry *typical(size_t nchunks)
{
	struct filer_entry *e = filer_entry_new("/buckets/photos/2024/06", "img_0001.jpg");
	static const uint8_t md5[16] = {0x5d, 0x41, 0x40, 0x2a, 0xbc, 0x4b, 0x2a, 0x76,
					0xb9, 0x71, 0x9d, 0x91, 0x10, 0x17, 0xc5, 0x92};
	e->attr.mode = S_IFREG | 0644;
	e->attr.uid = e->attr.gid = 1000;
	e->attr.mtime_ns = e->attr.ctime_ns = e->attr.crtime_ns = 1764460000120000000ll;
	e->attr.nlink = 1;
	e->attr.mime = xstrdup("image/jpeg");
	filer_entry_xattr_set(e, "Seaweed-X-Amz-Meta-Camera", "NIKON D850", 10);
	filer_entry_xattr_set(e, "Seaweed-X-Weedfs-Md5", md5, sizeof(md5));
	for (size_t i = 0; i < nchunks; i++) {
		char fid[32], etag[16];
		snprintf(fid, sizeof(fid), "%zu,%08zx%02x", i % 7 + 1, 0x1637037d + i * 977, 0xd6);
		snprintf(etag, sizeof(etag), "%08zx", 0x2af97e0a ^ (i * 2654435761u));
		filer_entry_add_chunk(e, fid, (uint64_t)i << 22, 1u << 22,
				      1764460000000000000ll + (int64_t)i, etag, false);
	}
	e->attr.size = (uint64_t)nchunks << 22;
	return e;
}

enum way { ANSWER_WRITE, ANSWER_READ, REQUEST_WRITE, REQUEST_PARSE };
static const char *const way_names[] = {"answer write", "answer read", "request write",
					"request parse"};

/* One round of way on e; text is the answer (ANSWER_READ) or the request (REQUEST_PARSE). */
static void once(enum way way, const struct filer_entry *e, const struct filer_meta_new *n,
		 const buf *text, buf *scratch)
{
	char msg[128];
	switch (way) {
	case ANSWER_WRITE:
		buf_reset(scratch);
		entry_json(e, ENTRY_JSON_CONTENT, scratch);
		break;
	case ANSWER_READ: {
		yajl_val v = json_parse(text->data, text->len, msg, sizeof(msg));
		struct filer_entry *d = filer_meta_entry_from_json(v);
		if (!d)
			fatal("the answer does not decode");
		filer_entry_free(d);
		yajl_tree_free(v);
		break;
	}
	case REQUEST_WRITE:
		buf_reset(scratch);
		filer_meta_create_body(scratch, "/buckets/photos/2024/06/img_0001.jpg", n, true);
		break;
	case REQUEST_PARSE: {
		struct api_req *r;
		if (api_req_parse("create", text->data, text->len, NULL, 0, &r, msg, sizeof(msg)))
			fatal("the request does not parse: %s", msg);
		api_req_free(r);
		break;
	}
	}
}

static void measure(size_t nchunks)
{
	struct filer_entry *e = typical(nchunks);
	struct filer_meta_new n = {
		.mode = e->attr.mode,
		.uid = e->attr.uid,
		.gid = e->attr.gid,
		.time_ns = e->attr.mtime_ns,
		.mime = e->attr.mime,
		.chunks = e->chunks,
		.n_chunks = e->n_chunks,
		.xattrs = e->xattrs,
		.n_xattrs = e->n_xattrs,
	};
	buf answer = BUF_INIT, request = BUF_INIT, scratch = BUF_INIT;

	entry_json(e, ENTRY_JSON_CONTENT, &answer);
	filer_meta_create_body(&request, "/buckets/photos/2024/06/img_0001.jpg", &n, true);
	for (enum way way = ANSWER_WRITE; way <= REQUEST_PARSE; way++) {
		const buf *text = way == ANSWER_READ ? &answer : &request;
		double t0 = now(), t;
		unsigned long count = 0;
		do {
			for (int i = 0; i < 64; i++)
				once(way, e, &n, text, &scratch);
			count += 64;
		} while ((t = now() - t0) < seconds);
		printf("entry_json: %-13s %3zu chunk%s %9.0f entries/s  (%zu bytes of JSON)\n",
		       way_names[way], nchunks, nchunks == 1 ? ": " : "s:", (double)count / t,
		       way <= ANSWER_READ ? answer.len : request.len);
	}
	buf_free(&answer);
	buf_free(&request);
	buf_free(&scratch);
	filer_entry_free(e);
}

int main(int argc, char **argv)
{
	if (argc > 1 && (seconds = strtod(argv[1], NULL)) <= 0)
		fatal("usage: entry_json [SECONDS]");
	measure(1);
	measure(100);
	return 0;
}
