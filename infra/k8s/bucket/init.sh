#!/bin/sh
# One-shot (image minio/mc) of docker-compose.yml's `bucket-init` and the k8s Job gensvc-bucket-init, run as the
# store's administrator (S3_ADMIN_*), whose credentials the fleet never gets:
# - creates the bucket the fleet stores files in;
# - applies outputs-policy.json (BUCKET replaced by S3_BUCKET): anonymous GET on generated outputs (outputs/*) only,
#   so their {file_url} links are public (spec §2.5); uploads and everything else stay private (the edge serves them
#   through signed links);
# - makes the fleet's key (S3_ACCESS_KEY_ID / S3_SECRET_ACCESS_KEY) a MinIO user whose only policy is
#   fleet-policy.json: objects of this bucket, no other bucket, no bucket policy, no administration.
# Safe to run again: the policies are replaced, the user's secret set again. The user step is MinIO's admin API; on
# another S3 store, make the bucket, its policy and a key limited to it yourself and run neither one-shot.
set -eu
: "${S3_ENDPOINT:?}" "${S3_BUCKET:?}" "${S3_ADMIN_ACCESS_KEY_ID:?}" "${S3_ADMIN_SECRET_ACCESS_KEY:?}"
: "${S3_ACCESS_KEY_ID:?}" "${S3_SECRET_ACCESS_KEY:?}"
here="$(dirname "$0")"
# mc keeps its aliases under $HOME/.mc: somewhere writable when the root file system is read-only (k8s).
export MC_CONFIG_DIR="${MC_CONFIG_DIR:-/tmp/.mc}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed "s/BUCKET/$S3_BUCKET/g" "$here/outputs-policy.json" > "$work/outputs-policy.json"
sed "s/BUCKET/$S3_BUCKET/g" "$here/fleet-policy.json" > "$work/fleet-policy.json"
fleet_policy="gensvc-fleet-$S3_BUCKET"

mc alias set store "$S3_ENDPOINT" "$S3_ADMIN_ACCESS_KEY_ID" "$S3_ADMIN_SECRET_ACCESS_KEY" >/dev/null
mc mb --ignore-existing "store/$S3_BUCKET"
mc anonymous set-json "$work/outputs-policy.json" "store/$S3_BUCKET"
mc admin policy create store "$fleet_policy" "$work/fleet-policy.json"
mc admin user add store "$S3_ACCESS_KEY_ID" "$S3_SECRET_ACCESS_KEY"
# Attaching a policy the user already has is an error in mc: attach only when it is missing.
case "$(mc admin policy entities store --user "$S3_ACCESS_KEY_ID" --json)" in
  *"\"$fleet_policy\""*) ;;
  *) mc admin policy attach store "$fleet_policy" --user "$S3_ACCESS_KEY_ID" ;;
esac
echo "bucket $S3_BUCKET ready at $S3_ENDPOINT: anonymous GET on outputs/* only; key $S3_ACCESS_KEY_ID limited to it"
