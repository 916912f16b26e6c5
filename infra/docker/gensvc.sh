#!/bin/sh
# Entrypoint of the gensvc image: `docker run IMAGE <service> [args...]` runs services/<service>/dist/main.js.
# One image serves every process of the fleet (DESIGN.md section 2); the first argument picks which one.
# GENSVC_HOME (default /app) is where the workspace lives; the deployment test points it at a scratch tree.
set -eu

home="${GENSVC_HOME:-/app}"

available() {
  for main in "$home"/services/*/dist/main.js; do
    [ -f "$main" ] || continue
    dir="${main%/dist/main.js}"
    printf '  %s\n' "${dir##*/}"
  done
}

usage() {
  echo "usage: gensvc <service> [args...]"
  echo "services in this image:"
  available
}

name="${1:-}"
case "$name" in
  -h | --help)
    usage
    exit 0
    ;;
  '')
    usage >&2
    exit 64
    ;;
  # A name is one directory under services/: nothing that could walk out of it.
  .* | */* | *[!A-Za-z0-9._-]*)
    echo "gensvc: invalid service name: $name" >&2
    usage >&2
    exit 64
    ;;
esac

main="$home/services/$name/dist/main.js"
if [ ! -f "$main" ]; then
  echo "gensvc: unknown service: $name" >&2
  usage >&2
  exit 64
fi

# The service's Node/V8 flags (services/<name>/node-flags, whitespace-separated, `#` comments), as every launcher
# outside the image passes them (libs/local-stack serviceArgs). Unquoted on purpose: one word per flag.
flags=""
if [ -f "$home/services/$name/node-flags" ]; then flags=$(sed -e 's/#.*//' "$home/services/$name/node-flags"); fi

shift
cd "$home"
# The flags split on whitespace, never globbed.
set -f
# shellcheck disable=SC2086
exec node $flags "$main" "$@"
