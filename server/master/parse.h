/*
 * Parsers for bytes the master receives from the network: heartbeat bodies
 * (docs/internal-protocol.md), file-id request paths and form bodies.
 * Pure; any thread.
 */
#ifndef WEEDFS_MASTER_PARSE_H
#define WEEDFS_MASTER_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "server/master/topology.h"

/* Bound on the volumes one heartbeat may list. */
#define HEARTBEAT_MAX_VOLUMES 1000000

/* A parsed heartbeat: hb's strings point into the parse tree it owns. */
struct heartbeat_msg {
	struct topo_heartbeat hb;
	char url[TOPO_URL_MAX]; /* ip:port */
	void *tree;             /* yajl_val */
	struct topo_vol_report *vols;
	struct topo_ec_report *ecs;
};

/*
 * Parses a heartbeat body of len bytes; peer is used when "ip" is absent.
 * Returns true and fills *out (release with heartbeat_msg_free), or false
 * with a message in msg (nothing to free). Borrows data and peer.
 */
bool heartbeat_parse(const char *data, size_t len, const char *peer, struct heartbeat_msg *out,
		     char *msg, size_t msglen);
void heartbeat_msg_free(struct heartbeat_msg *m);

/* True for a usable collection name: [A-Za-z0-9._-], shorter than TOPO_NAME_MAX. */
bool master_collection_valid(const char *s);

/*
 * Parses a request path naming a file: "/<vid>,<keycookie>[.ext]",
 * "/<vid>/<keycookie>[.ext]" or "/<vid>/<keycookie>/<filename>". Returns
 * true with the volume id, false when malformed.
 */
bool fid_path_parse(const char *path, uint32_t *vid);

/* Fields of an application/x-www-form-urlencoded body, decoded and owned. */
#define FORM_MAX_BODY   65536
#define FORM_MAX_FIELDS 64
struct form {
	size_t n;
	char *name[FORM_MAX_FIELDS];
	char *value[FORM_MAX_FIELDS];
};

/* Decodes "a=1&b=2" (len bytes); false when malformed or over FORM_MAX_FIELDS. */
bool form_parse(const char *data, size_t len, struct form *f);
/* Releases the fields; NULL does nothing. */
void form_free(struct form *f);

#endif
