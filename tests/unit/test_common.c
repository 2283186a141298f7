/* Unit tests of server/common: file ids, replica placement, TTL. */
#include "config.h"
#include <string.h>
#include "client/fid.h"
#include "server/common/placement.h"
#include "tap.h"

static void test_fid(void)
{
	struct fid f;
	const char *ext;
	char out[FID_STR_MAX];

	is_int(fid_parse("3,01637037d6", &f, &ext), WFS_OK, "reference fid parses");
	is_int(f.volume_id, 3, "volume id");
	is_int(f.key, 1, "key");
	is_int(f.cookie, 0x637037d6, "cookie");
	ok(ext == NULL, "no extension");
	fid_format(&f, out, sizeof(out));
	is_str(out, "3,01637037d6", "formats back with an even number of key digits");

	is_int(fid_parse("3,01637037d6_2", &f, NULL), WFS_OK, "_N suffix parses");
	is_int(f.key, 3, "_N adds to the key");
	is_int(fid_parse("7,abc12345678.jpg", &f, &ext), WFS_OK, "extension parses");
	is_str(ext, ".jpg", "extension returned");
	is_int(f.key, 0xabc, "odd-length key");
	fid_format(&f, out, sizeof(out));
	is_str(out, "7,0abc12345678", "odd-length key is padded");

	f.volume_id = 4294967295u, f.key = UINT64_MAX, f.cookie = 0xffffffff;
	fid_format(&f, out, sizeof(out));
	is_str(out, "4294967295,ffffffffffffffffffffffff", "largest fid formats");
	ok(fid_parse(out, &f, NULL) == WFS_OK && f.key == UINT64_MAX, "largest fid parses back");

	static const char *bad[] = {"",
				    ",",
				    "3,",
				    ",01637037d6",
				    "3,637037d6",
				    "x,01637037d6",
				    "3,0163703zd6",
				    "3,01637037d6_",
				    "3,01637037d6_x",
				    "4294967296,01637037d6",
				    "3,01637037d6.",
				    "3,1ffffffffffffffff637037d6",
				    "3;01637037d6",
				    "-3,01637037d6"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		is_int(fid_parse(bad[i], &f, NULL), WFS_EINVAL, bad[i]);
}

static void test_placement(void)
{
	struct replica_placement rp;
	char s[4];

	is_int(replica_placement_parse("110", &rp), WFS_OK, "110 parses");
	is_int(replica_placement_byte(&rp), 110, "byte is x*100+y*10+z");
	is_int(replica_placement_copies(&rp), 3, "110 means three copies");
	replica_placement_from_byte(201, &rp);
	replica_placement_format(&rp, s);
	is_str(s, "201", "byte round-trips");
	is_int(replica_placement_parse("", &rp), WFS_OK, "empty is 000");
	is_int(replica_placement_copies(&rp), 1, "000 is one copy");
	is_int(replica_placement_parse("0x1", &rp), WFS_EINVAL, "0x1 rejected");
	is_int(replica_placement_parse("12", &rp), WFS_EINVAL, "two digits rejected");
	is_int(replica_placement_parse("0010", &rp), WFS_EINVAL, "four digits rejected");
}

static void test_ttl(void)
{
	struct ttl t;
	char s[8];
	uint8_t b[2];

	is_int(ttl_parse("3d", &t), WFS_OK, "3d parses");
	is_int(ttl_seconds(&t), 3 * 86400, "3d in seconds");
	ttl_format(&t, s);
	is_str(s, "3d", "3d formats back");
	ttl_to_bytes(&t, b);
	ok(b[0] == 3 && b[1] == TTL_DAY, "bytes are count then unit");
	is_int(ttl_parse("15", &t), WFS_OK, "bare number parses");
	is_int(ttl_seconds(&t), 15 * 60, "bare number is minutes");
	is_int(ttl_parse("300m", &t), WFS_OK, "300m carries into hours");
	ttl_format(&t, s);
	is_str(s, "5h", "300m is 5h");
	is_int(ttl_parse("1M", &t), WFS_OK, "month parses");
	is_int(ttl_parse("", &t), WFS_OK, "empty is no ttl");
	ok(!ttl_is_set(&t), "empty is unset");
	ttl_format(&t, s);
	is_str(s, "", "unset formats empty");
	is_int(ttl_parse("5q", &t), WFS_EINVAL, "unknown unit rejected");
	is_int(ttl_parse("d", &t), WFS_EINVAL, "missing count rejected");
	is_int(ttl_parse("3dd", &t), WFS_EINVAL, "trailing junk rejected");
	is_int(ttl_parse("301m", &t), WFS_EINVAL, "inexact carry rejected");
	is_int(ttl_parse("99999999999", &t), WFS_EINVAL, "huge count rejected");
}

int main(void)
{
	test_fid();
	test_placement();
	test_ttl();
	return done_testing();
}
