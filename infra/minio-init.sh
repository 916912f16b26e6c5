#!/bin/sh
# One-shot of docker-compose.yml (image minio/mc): creates the bucket the fleet stores files in, privately
# (files are served through the edge's signed links, never straight from the bucket). Safe to run again.
set -eu
: "${MINIO_ROOT_USER:?}" "${MINIO_ROOT_PASSWORD:?}" "${S3_BUCKET:?}"
endpoint="${MINIO_ENDPOINT:-http://minio:9000}"

mc alias set gensvc "$endpoint" "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" >/dev/null
mc mb --ignore-existing "gensvc/$S3_BUCKET"
mc anonymous set none "gensvc/$S3_BUCKET"
echo "bucket $S3_BUCKET ready at $endpoint"
