/*
 * The master's HTTP API in-process on a loopback port: heartbeats as a volume
 * server sends them, assignments, lookups, redirects, status pages and the
 * 400s for bad input. Growth towards real volume servers is covered by the
 * integration tests; here only its failure path (impossible placement) runs.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "http_client.h"
#include "json.h"
#include "server/master/master.h"
#include "tap.h"
#include "util.h"

static char base[64];

static int req(const char *method, const char *path, const char *body, struct http_result *r)
{
	char url[512];
	const char *hdr[] = {"Content-Type: application/json", NULL};
	snprintf(url, sizeof(url), "%s%s", base, path);
	http_result_free(r);
	http_result_init(r);
	if (http_request(method, url, body ? hdr : NULL, body, body ? strlen(body) : 0, 5000, r))
		return -1;
	return r->status;
}

static int post_form(const char *path, const char *form, struct http_result *r)
{
	char url[512];
	const char *hdr[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	snprintf(url, sizeof(url), "%s%s", base, path);
	http_result_free(r);
	http_result_init(r);
	if (http_request("POST", url, hdr, form, strlen(form), 5000, r))
		return -1;
	return r->status;
}

static const char *body(struct http_result *r) { return r->body.data ? r->body.data : ""; }

static const char *hb_json =
	"{\"ip\":\"127.0.0.1\",\"port\":1,\"publicUrl\":\"pub.example:1\",\"dataCenter\":\"dc1\","
	"\"rack\":\"rack1\",\"maxVolumeCount\":4,\"maxFileKey\":900000,\"volumes\":["
	"{\"id\":1,\"collection\":\"\",\"replication\":\"000\",\"ttl\":\"\",\"size\":100,"
	"\"fileCount\":3,\"deleteCount\":1,\"deletedBytes\":10,\"readOnly\":false,"
	"\"compactRevision\":0,\"version\":3,\"modifiedAtSecond\":1700000000},"
	"{\"id\":6,\"collection\":\"pics\",\"replication\":\"000\",\"ttl\":\"3d\",\"size\":0}]}";

int main(void)
{
	char dir[] = "/tmp/test_master_http.XXXXXX";
	struct master_opts o;
	struct master *m;
	struct http_result r;
	char loc[512], first_fid[64];
	wfs_err err;
	yajl_val v;
	const char *s;

	if (!mkdtemp(dir))
		return 1;
	http_client_global_init();
	master_opts_default(&o);
	o.port = 0;
	o.mdir = dir;
	o.threads = 2;
	m = master_start(&o, &err);
	ok(m != NULL, "master starts");
	if (!m)
		return done_testing();
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", master_port(m));
	http_result_init(&r);

	is_int(req("GET", "/healthz", NULL, &r), 200, "healthz");
	is_int(req("GET", "/readyz", NULL, &r), 200, "readyz");
	is_int(req("POST", "/heartbeat", "{not json", &r), 400, "bad heartbeat JSON");
	is_int(req("POST", "/heartbeat", "{\"ip\":\"127.0.0.1\"}", &r), 400, "heartbeat w/o port");
	is_int(req("POST", "/heartbeat", hb_json, &r), 200, "heartbeat accepted");
	ok(strstr(body(&r), "\"volumeSizeLimit\":31457280000") &&
		   strstr(body(&r), "\"pulseSeconds\":5") &&
		   strstr(body(&r), "\"leader\":\"127.0.0.1:"),
	   "heartbeat reply: %s", body(&r));

	is_int(req("GET", "/dir/assign", NULL, &r), 200, "assign");
	v = json_parse(body(&r), r.body.len, NULL, 0);
	ok(json_get_str(v, "fid", &s) && !strncmp(s, "1,", 2), "fid on volume 1: %s", body(&r));
	snprintf(first_fid, sizeof(first_fid), "%s", s ? s : "");
	ok(json_get_str(v, "url", &s) && !strcmp(s, "127.0.0.1:1"), "url");
	ok(json_get_str(v, "publicUrl", &s) && !strcmp(s, "pub.example:1"), "publicUrl");
	{
		int64_t c = 0;
		ok(json_get_i64(v, "count", &c) && c == 1, "count 1");
	}
	yajl_tree_free(v);
	{
		/* Keys come after the heartbeat's maxFileKey (900000 = 0xdbba0). */
		const char *comma = strchr(first_fid, ',');
		size_t hexlen = comma ? strlen(comma + 1) : 0;
		char keyhex[32] = "";
		if (hexlen > 8)
			memcpy(keyhex, comma + 1, hexlen - 8);
		ok(strtoull(keyhex, NULL, 16) > 900000, "key %s above maxFileKey", keyhex);
	}
	is_int(req("GET", "/dir/assign?count=5&pretty=y", NULL, &r), 200, "assign count=5");
	ok(strstr(body(&r), "\"count\": 5") != NULL, "pretty and count 5");
	is_int(req("POST", "/dir/assign?collection=pics&ttl=3d", NULL, &r), 200,
	       "POST assign in a collection");
	ok(!strncmp(body(&r), "{\"fid\":\"6,", 10), "collection volume 6: %s", body(&r));

	is_int(post_form("/dir/assign", "collection=pics&ttl=3d&count=2", &r), 200,
	       "assign with a POSTed form");
	ok(!strncmp(body(&r), "{\"fid\":\"6,", 10) && strstr(body(&r), "\"count\":2"),
	   "form parameters used: %s", body(&r));
	is_int(post_form("/dir/assign", "ttl=5q", &r), 400, "bad ttl in a form");
	is_int(post_form("/dir/assign", "collection=%zz", &r), 400, "malformed form");
	is_int(req("GET", "/dir/assign?replication=0x1", NULL, &r), 400, "replication 0x1");
	ok(strstr(body(&r), "\"error\"") != NULL, "JSON error body");
	is_int(req("GET", "/dir/assign?replication=12", NULL, &r), 400, "replication 12");
	is_int(req("GET", "/dir/assign?ttl=5q", NULL, &r), 400, "ttl 5q");
	is_int(req("GET", "/dir/assign?count=0", NULL, &r), 400, "count 0");
	is_int(req("GET", "/dir/assign?count=abc", NULL, &r), 400, "count abc");
	is_int(req("GET", "/dir/assign?count=99999999999999", NULL, &r), 400, "huge count");
	is_int(req("GET", "/dir/assign?collection=a/b", NULL, &r), 400, "bad collection");
	is_int(req("GET", "/dir/assign?dataSize=x", NULL, &r), 400, "bad dataSize");
	is_int(req("GET", "/dir/assign?replication=001", NULL, &r), 507,
	       "replication impossible on one server: no free slot for it");
	ok(strstr(body(&r), "not enough servers on a rack for replication 001: have 1 with free "
			    "slots, need 2") != NULL,
	   "growth error names the constraint: %s", body(&r));
	is_int(req("GET", "/dir/assign?replication=100", NULL, &r), 507, "100 on one dc");
	ok(strstr(body(&r),
		  "not enough data centers for replication 100: have 1 with free slots, need 2") !=
		   NULL,
	   "%s", body(&r));

	is_int(req("GET", "/dir/lookup?volumeId=1", NULL, &r), 200, "lookup");
	is_str(body(&r),
	       "{\"volumeOrFileId\":\"1\",\"locations\":[{\"url\":\"127.0.0.1:1\",\"publicUrl\":"
	       "\"pub.example:1\",\"dataCenter\":\"dc1\"}]}",
	       "lookup body");
	is_int(req("GET", "/dir/lookup?fileId=1,01637037d6", NULL, &r), 200, "lookup by fid");
	is_int(req("GET", "/dir/lookup?volumeId=9", NULL, &r), 404, "lookup unknown");
	is_str(body(&r), "{\"volumeOrFileId\":\"9\",\"error\":\"volume id 9 not found\"}",
	       "404 body");
	is_int(req("GET", "/dir/lookup?volumeId=abc", NULL, &r), 400, "lookup malformed");
	is_int(req("GET", "/dir/lookup", NULL, &r), 400, "lookup without id");

	is_int(req("GET", "/1,01637037d6?width=10", NULL, &r), 308, "redirect");
	ok(http_result_header(&r, "Location", loc, sizeof(loc)), "Location header");
	is_str(loc, "http://pub.example:1/1,01637037d6?width=10", "redirect keeps the query");
	is_int(req("HEAD", "/1/01637037d6/photo.jpg", NULL, &r), 308, "HEAD redirect, path form");
	is_int(req("GET", "/1,01637037d6.jpg", NULL, &r), 308, "redirect with extension");
	is_int(req("GET", "/9,01637037d6", NULL, &r), 404, "redirect to unknown volume");
	is_int(req("GET", "/1,zz", NULL, &r), 400, "malformed fid");
	is_int(req("GET", "/1,", NULL, &r), 400, "empty key");
	is_int(req("DELETE", "/1,01637037d6", NULL, &r), 405, "DELETE on the master");

	is_int(req("GET", "/dir/status?pretty=y", NULL, &r), 200, "dir/status");
	ok(strstr(body(&r), "\"Id\": \"dc1\"") &&
		   strstr(body(&r), "\"PublicUrl\": \"pub.example:1\"") &&
		   strstr(body(&r), "\"Version\""),
	   "dir/status content");
	is_int(req("GET", "/vol/status", NULL, &r), 200, "vol/status");
	ok(strstr(body(&r), "\"dc1\":{\"rack1\":{\"127.0.0.1:1\":[") != NULL, "vol/status tree");
	is_int(req("GET", "/collection/info?collection=pics", NULL, &r), 200, "collection/info");
	ok(strstr(body(&r), "\"VolumeCount\":1") != NULL, "collection volume count: %s", body(&r));
	is_int(req("GET", "/collection/info?detail=true", NULL, &r), 200, "collection/info detail");
	ok(strstr(body(&r), "\"Layouts\":[") != NULL, "detail layouts");
	is_int(req("GET", "/", NULL, &r), 200, "status page");
	ok(strstr(body(&r), "<html>") && strstr(body(&r), "pub.example:1"), "html lists the node");

	is_int(req("GET", "/vol/vacuum?garbageThreshold=2", NULL, &r), 400, "threshold > 1");
	is_int(req("GET", "/vol/vacuum?garbageThreshold=x", NULL, &r), 400, "threshold NaN");
	is_int(req("GET", "/vol/grow", NULL, &r), 400, "grow without count");
	is_int(req("GET", "/vol/grow?count=0", NULL, &r), 400, "grow count 0");
	is_int(req("GET", "/vol/grow?count=1&replication=010", NULL, &r), 507,
	       "grow impossible placement");
	is_int(req("GET", "/col/delete?collection=nope", NULL, &r), 400,
	       "delete unknown collection");
	is_int(req("GET", "/col/delete", NULL, &r), 400, "delete without collection");
	is_int(req("POST", "/submit", "x", &r), 400, "submit without multipart");

	http_result_free(&r);
	master_stop(m);

	/* A restarted master never hands out the same key. */
	m = master_start(&o, &err);
	ok(m != NULL, "master restarts");
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", master_port(m));
	http_result_init(&r);
	is_int(req("POST", "/heartbeat", hb_json, &r), 200, "heartbeat after restart");
	is_int(req("GET", "/dir/assign", NULL, &r), 200, "assign after restart");
	ok(strcmp(body(&r), first_fid) != 0, "new key differs");
	http_result_free(&r);
	master_stop(m);
	{
		char path[128];
		snprintf(path, sizeof(path), "%s/weedfs_master.seq", dir);
		unlink(path);
		rmdir(dir);
	}
	return done_testing();
}
