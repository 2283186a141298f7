#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/fid.h"
#include "http_util.h"
#include "json.h"
#include "server/master/parse.h"
#include "util.h"

bool master_collection_valid(const char *s)
{
	size_t n = strlen(s);
	if (n >= TOPO_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return false;
	}
	return true;
}

void heartbeat_msg_free(struct heartbeat_msg *m)
{
	if (!m)
		return;
	free(m->vols);
	free(m->ecs);
	yajl_tree_free(m->tree);
	m->vols = NULL;
	m->ecs = NULL;
	m->tree = NULL;
}

static bool parse_volume(yajl_val v, struct topo_vol_report *r, char *msg, size_t msglen)
{
	uint64_t id = 0, u;
	const char *rp = "", *ttl = "", *coll = "";
	bool ro = false;

	memset(r, 0, sizeof(*r));
	if (!json_get_u64(v, "id", &id) || id == 0 || id > UINT32_MAX) {
		snprintf(msg, msglen, "bad heartbeat: volume without a valid id");
		return false;
	}
	json_get_str(v, "collection", &coll);
	json_get_str(v, "replication", &rp);
	json_get_str(v, "ttl", &ttl);
	if (!master_collection_valid(coll) || replica_placement_parse(rp, &r->rp) ||
	    ttl_parse(ttl, &r->ttl)) {
		snprintf(msg, msglen,
			 "bad heartbeat: volume %" PRIu64
			 " has an invalid collection, replication or ttl",
			 id);
		return false;
	}
	r->id = (uint32_t)id;
	r->collection = coll;
	json_get_u64(v, "size", &r->size);
	json_get_u64(v, "fileCount", &r->file_count);
	json_get_u64(v, "deleteCount", &r->delete_count);
	json_get_u64(v, "deletedBytes", &r->deleted_bytes);
	json_get_bool(v, "readOnly", &ro);
	r->read_only = ro;
	if (json_get_u64(v, "compactRevision", &u) && u <= UINT32_MAX)
		r->compact_revision = (uint32_t)u;
	if (json_get_u64(v, "version", &u) && u <= UINT32_MAX)
		r->version = (uint32_t)u;
	json_get_i64(v, "modifiedAtSecond", &r->modified_at);
	return true;
}

bool heartbeat_parse(const char *data, size_t len, const char *peer, struct heartbeat_msg *out,
		     char *msg, size_t msglen)
{
	char errbuf[256];
	yajl_val root, vs;
	const char *ip = NULL, *s;
	int64_t port = 0, maxv = 0;

	memset(out, 0, sizeof(*out));
	root = json_parse(data, len, errbuf, sizeof(errbuf));
	out->tree = root;
	if (!root || !YAJL_IS_OBJECT(root)) {
		snprintf(msg, msglen, "bad heartbeat: %s", root ? "not an object" : errbuf);
		goto fail;
	}
	if (!json_get_str(root, "ip", &ip) || !*ip)
		ip = peer ? peer : "";
	if (!json_get_i64(root, "port", &port) || port <= 0 || port > 65535) {
		snprintf(msg, msglen, "bad heartbeat: missing or invalid port");
		goto fail;
	}
	if (!*ip || strchr(ip, '/') ||
	    snprintf(out->url, sizeof(out->url), "%s:%" PRId64, ip, port) >=
		    (int)sizeof(out->url)) {
		snprintf(msg, msglen, "bad heartbeat: invalid ip");
		goto fail;
	}
	out->hb.url = out->url;
	if (json_get_str(root, "publicUrl", &s) && strlen(s) < TOPO_URL_MAX)
		out->hb.public_url = s;
	if (json_get_str(root, "dataCenter", &s) && strlen(s) < TOPO_NAME_MAX)
		out->hb.dc = s;
	if (json_get_str(root, "rack", &s) && strlen(s) < TOPO_NAME_MAX)
		out->hb.rack = s;
	if (json_get_i64(root, "maxVolumeCount", &maxv) && maxv >= 0 && maxv <= 1000000)
		out->hb.max_volumes = (int)maxv;
	json_get_u64(root, "maxFileKey", &out->hb.max_file_key);
	vs = json_get(root, "volumes");
	if (vs && YAJL_IS_ARRAY(vs)) {
		size_t n = vs->u.array.len;
		if (n > HEARTBEAT_MAX_VOLUMES) {
			snprintf(msg, msglen, "bad heartbeat: too many volumes");
			goto fail;
		}
		out->vols = xcalloc(n ? n : 1, sizeof(*out->vols));
		for (size_t i = 0; i < n; i++)
			if (!parse_volume(vs->u.array.values[i], &out->vols[i], msg, msglen))
				goto fail;
		out->hb.nvols = n;
	} else if (vs && !YAJL_IS_NULL(vs)) {
		snprintf(msg, msglen, "bad heartbeat: volumes is not an array");
		goto fail;
	}
	out->hb.vols = out->vols;
	vs = json_get(root, "ecShards");
	if (vs && YAJL_IS_ARRAY(vs)) {
		size_t n = vs->u.array.len;
		if (n > HEARTBEAT_MAX_VOLUMES) {
			snprintf(msg, msglen, "bad heartbeat: too many EC volumes");
			goto fail;
		}
		out->ecs = xcalloc(n ? n : 1, sizeof(*out->ecs));
		for (size_t i = 0; i < n; i++) {
			yajl_val e = vs->u.array.values[i];
			struct topo_ec_report *r = &out->ecs[i];
			uint64_t id = 0, bits = 0;
			const char *coll = "";
			if (!json_get_u64(e, "id", &id) || id == 0 || id > UINT32_MAX ||
			    !json_get_u64(e, "shards", &bits) || bits > 0x3fff ||
			    (json_get_str(e, "collection", &coll) && !(!*coll ||
			     master_collection_valid(coll)))) {
				snprintf(msg, msglen, "bad heartbeat: invalid ecShards entry %zu", i);
				goto fail;
			}
			r->id = (uint32_t)id;
			r->collection = coll;
			r->shards = (uint16_t)bits;
		}
		out->hb.necs = n;
	} else if (vs && !YAJL_IS_NULL(vs)) {
		snprintf(msg, msglen, "bad heartbeat: ecShards is not an array");
		goto fail;
	}
	out->hb.ecs = out->ecs;
	return true;
fail:
	heartbeat_msg_free(out);
	return false;
}

bool fid_path_parse(const char *path, uint32_t *vid)
{
	const char *s, *sep, *kc, *end, *dot;
	struct fid f;
	uint64_t key;
	uint32_t cookie;

	if (path[0] != '/')
		return false;
	s = path + 1;
	sep = s + strcspn(s, ",/");
	if (!*sep || !volume_id_parse(s, (size_t)(sep - s), vid))
		return false;
	if (*sep == ',') {
		if (strchr(sep, '/'))
			return false;
		return fid_parse(s, &f, NULL) == WFS_OK;
	}
	kc = sep + 1;
	end = kc + strcspn(kc, "/");
	if (*end == '/' && (!end[1] || strchr(end + 1, '/')))
		return false;
	dot = memchr(kc, '.', (size_t)(end - kc));
	if (dot && *end == '/')
		return false;
	if (dot)
		end = dot;
	return fid_parse_key_cookie(kc, (size_t)(end - kc), &key, &cookie) == WFS_OK;
}

void form_free(struct form *f)
{
	for (size_t i = 0; f && i < f->n; i++) {
		free(f->name[i]);
		free(f->value[i]);
	}
}

bool form_parse(const char *data, size_t len, struct form *f)
{
	const char *p = data, *end = data + len;
	memset(f, 0, sizeof(*f));
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p)), *eq;
		buf k = BUF_INIT, v = BUF_INIT;
		if (!amp)
			amp = end;
		eq = memchr(p, '=', (size_t)(amp - p));
		if (amp > p) {
			bool good = f->n < FORM_MAX_FIELDS &&
				    url_decode(p, (size_t)((eq ? eq : amp) - p), true, &k) &&
				    (!eq || url_decode(eq + 1, (size_t)(amp - eq - 1), true, &v));
			if (!good) {
				buf_free(&k);
				buf_free(&v);
				form_free(f);
				return false;
			}
			f->name[f->n] = buf_steal(&k, NULL);
			f->value[f->n] = buf_steal(&v, NULL);
			f->n++;
		}
		p = amp + 1;
	}
	return true;
}
