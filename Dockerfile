# edgeward: one image for `edgeward server`, `edgeward edge`, `edgeward agent` and `edgeward operator`.
# Node 22 LTS: Node 24 aborts (SIGABRT in better-sqlite3's Statement finalizer, RemoveEnvironmentCleanupHook),
# seen by running this image's equivalent; Node 20 is past its end of life. Node 22.12 is the package's minimum.
# Built in two stages so the runtime image has no compiler, no dev dependencies and no sources.
FROM node:22-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 is compiled from source when no prebuilt binary matches.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
# 4040 the API; an edge: 4443 tunnel, 8443 TLS edges (unprivileged), 2222 SSH, 9464 metrics.
EXPOSE 4040 4443 8443 2222 9464
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["server", "--host", "0.0.0.0", "--port", "4040", "--data-dir", "/data"]
