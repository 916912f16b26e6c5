#!/bin/sh
# One-shot (image minio/mc) of docker-compose.yml's `bucket-init` and the k8s Job gensvc-bucket-init: creates the
# bucket the fleet stores files in and applies outputs-policy.json (BUCKET replaced by S3_BUCKET): anonymous GET on
# generated outputs (outputs/*) only, so their {file_url} links are public (spec §2.5); uploads and everything else
# stay private (the edge serves them through signed links). Safe to run again: the policy is replaced, not merged.
# Any S3-compatible store that implements PutBucketPolicy works (MinIO, AWS S3 with Block Public Access allowing
# bucket policies, R2 does not: use a public custom domain on outputs/ there).
set -eu
: "${S3_ENDPOINT:?}" "${S3_ACCESS_KEY_ID:?}" "${S3_SECRET_ACCESS_KEY:?}" "${S3_BUCKET:?}"
here="$(dirname "$0")"
# mc keeps its aliases under $HOME/.mc: somewhere writable when the root file system is read-only (k8s).
export MC_CONFIG_DIR="${MC_CONFIG_DIR:-/tmp/.mc}"
policy="$(mktemp)"
sed "s/BUCKET/$S3_BUCKET/g" "$here/outputs-policy.json" > "$policy"

mc alias set gensvc "$S3_ENDPOINT" "$S3_ACCESS_KEY_ID" "$S3_SECRET_ACCESS_KEY" >/dev/null
mc mb --ignore-existing "gensvc/$S3_BUCKET"
mc anonymous set-json "$policy" "gensvc/$S3_BUCKET"
rm -f "$policy"
echo "bucket $S3_BUCKET ready at $S3_ENDPOINT: anonymous GET on outputs/* only"
