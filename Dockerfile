# One image for the four roles; docker-compose.yml picks the role per service.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY services services
COPY shared shared
COPY scripts scripts
COPY postgres postgres
COPY clickhouse clickhouse
COPY web web
# The server, then the dashboard (its API types from the server's own OpenAPI document) into dist/web.
RUN npm run build && bash scripts/build-web.sh && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/dist dist
COPY package.json ./
COPY postgres postgres
COPY clickhouse clickhouse
COPY public public
USER node
EXPOSE 8080
CMD ["node", "dist/services/main.js"]
