# One image for the whole fleet (DESIGN.md section 2): `docker run IMAGE <service>` runs services/<service>.
#   docker build -t gensvc .
#   docker run --rm gensvc            # lists the services in the image (not fleet or upstream-sim: npm start only)
#   docker run --rm -e DATABASE_URL=... gensvc admin-cli migrate
# infra/deployment.test.ts checks this file, docker-compose.yml and infra/k8s against the code.

# A maintained LTS line (Node 20 reached its end of life in April 2026); the code also runs on Node 20.19+, as
# package.json's engines say, so a developer machine on 20 builds and tests the same code.
ARG NODE_IMAGE=node:24-bookworm-slim
ARG PNPM_VERSION=12.21.0

# Only the workspace manifests, so that the dependency layer below is rebuilt when a manifest or the lockfile
# changes and not on every source edit. Globbing here means a new libs/* or services/* package needs no edit.
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN set -eu; \
    mkdir -p /manifests; \
    cp package.json pnpm-lock.yaml pnpm-workspace.yaml /manifests/; \
    for manifest in libs/*/package.json services/*/package.json; do \
      mkdir -p "/manifests/${manifest%/package.json}"; \
      cp "$manifest" "/manifests/$manifest"; \
    done

FROM ${NODE_IMAGE} AS build
ARG PNPM_VERSION
# CI=true: pnpm never prompts (there is no TTY) and treats the lockfile as frozen.
ENV CI=true
RUN npm install -g --no-audit --no-fund --loglevel=error "pnpm@${PNPM_VERSION}"
WORKDIR /app
COPY --from=manifests /manifests/ ./
RUN pnpm install --frozen-lockfile --store-dir /pnpm/store
COPY . .
# The schema reads DATABASE_URL through env(); generation needs a value but never connects.
RUN DATABASE_URL=postgresql://localhost/unused CHECKPOINT_DISABLE=1 node_modules/.bin/prisma generate
# Every package, including the dashboard's browser bundle (services/dashboard/dist, served by the edge).
RUN node scripts/build.mjs
# Production dependencies only, and none for the development packages (infra/docker/packages.txt: the local
# supervisor, embedded Postgres, s3rver, node-forge, test helpers). `pnpm prune` does not work across a workspace, so
# the links are dropped and installed again from the store filled above (offline); workspace packages stay
# symlinked to each other.
RUN rm -rf node_modules libs/*/node_modules services/*/node_modules \
 && sh infra/docker/install-runtime-deps.sh /pnpm/store
RUN sh infra/docker/assemble-runtime.sh /app /out

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
WORKDIR /app
# Root-owned and read-only for the `node` user the services run as.
COPY --from=build /out/ /
USER node
# The edge's default PORT (the API and the dashboard), and every service's internal ops port (OPS_PORT: /healthz,
# /readyz, /metrics). Health checks live in docker-compose.yml and infra/k8s, on the ops port.
EXPOSE 8080 9464
ENTRYPOINT ["/usr/local/bin/gensvc"]
