/*
 * Fuzzes what the master reads from the network: fid request paths, form
 * bodies and heartbeat bodies. Parsed heartbeats are applied to a topology and the
 * status writers run over it, so the topology's bookkeeping is fuzzed too.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "server/master/parse.h"
#include "server/master/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	if (size < 1 || size > 65536)
		return 0;
	s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (data[0] % 3 == 1) {
		uint32_t vid;
		fid_path_parse(s, &vid);
	} else if (data[0] % 3 == 2) {
		struct form f;
		if (form_parse(s, size - 1, &f)) {
			for (size_t i = 0; i < f.n; i++)
				if (!f.name[i] || !f.value[i])
					abort();
			form_free(&f);
		}
	} else {
		struct heartbeat_msg hm;
		char msg[256];
		if (heartbeat_parse(s, size - 1, "127.0.0.1", &hm, msg, sizeof(msg))) {
			topology *t = topology_new(1000, 1);
			struct topo_layout_key k = {"", {0, 0, 0}, {0, 0}};
			struct topo_location loc;
			uint32_t max_vid, vid;
			buf b = BUF_INIT;
			json_w *w = jw_new(&b, false);
			topology_heartbeat(t, &hm.hb, 1, &max_vid);
			topology_pick_writable(t, &k, NULL, 0, 2, 7, &vid, &loc);
			topology_write_dir_status(t, w, 2);
			topology_write_vol_status(t, w, 2);
			topology_write_collection_info(t, w, NULL, true, 2);
			topology_write_html(t, &b, 2);
			hm.hb.nvols /= 2;
			topology_heartbeat(t, &hm.hb, 3, &max_vid);
			topology_remove_collection(t, "");
			jw_free(w);
			buf_free(&b);
			topology_free(t);
			heartbeat_msg_free(&hm);
		}
	}
	free(s);
	return 0;
}
