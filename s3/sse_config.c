/*
 * A bucket's ServerSideEncryptionConfiguration (PutBucketEncryption) read
 * into the form the bucket's directory keeps (s3_sse.h), apart from the
 * gateway so that its fuzz target links only the XML reader.
 */
#include "config.h"
#include <string.h>
#include "s3/s3_sse.h"
#include "s3/xml.h"

const char *s3_sse_config_parse(const char *xml, size_t len, buf *out, bool *malformed)
{
	struct xml_node *root = NULL;
	const struct xml_node *rule, *def;
	const char *alg, *kid;
	char msg[128];
	const char *why = NULL;

	*malformed = true;
	if (xml_parse(xml, len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "ServerSideEncryptionConfiguration") ||
	    xml_count(root, "Rule") != 1 || !(rule = xml_child(root, "Rule")) ||
	    !(def = xml_child(rule, "ApplyServerSideEncryptionByDefault")) ||
	    !(alg = xml_child_text(def, "SSEAlgorithm"))) {
		xml_free(root);
		return "The XML you provided was not well-formed or did not validate against our "
		       "published schema";
	}
	*malformed = false;
	kid = xml_child_text(def, "KMSMasterKeyID");
	if (strcmp(alg, "AES256") && strcmp(alg, "aws:kms"))
		why = "The encryption method specified is not supported";
	else if (kid && strcmp(alg, "aws:kms"))
		why = "a KMSMasterKeyID is allowed only with SSEAlgorithm aws:kms";
	else if (kid && (!*kid || strlen(kid) > S3_SSE_KID_MAX || strchr(kid, ' ')))
		why = "The KMSMasterKeyID is not valid";
	if (!why) {
		buf_append(out, alg, strlen(alg));
		if (kid) {
			buf_append(out, " ", 1);
			buf_append(out, kid, strlen(kid));
		}
	}
	xml_free(root);
	return why;
}
