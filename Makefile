# The two commands of the quickstart: `make run` and `make test`. Each installs what it needs.
SHELL := /bin/bash
SOURCES := $(shell find services shared scripts \( -name '*.ts' -o -name '*.tsx' \) -not -name '*.test.ts' 2>/dev/null) package.json tsconfig.json tsconfig.build.json
WEB_SOURCES := $(shell find web -type f -not -name '*.generated.*' 2>/dev/null)

.PHONY: run test lint contract loadtest loadtest-short typecheck build install services services-down clean

node_modules/.installed: package.json package-lock.json
	# npm install, not npm ci: npm 11 writes lock files without other platforms' optional packages
	# (chDB, rollup) and npm ci then refuses them as out of sync. The lock file still pins every version.
	npm install --no-audit --no-fund --loglevel=error
	@touch $@

install: node_modules/.installed

# The server (tsc, then dist/package.json: the `#shared/…` imports mapped to the compiled files), then the dashboard (scripts/build-web.sh: its API types generated from the
# server's own OpenAPI document, a type-check against them, the Vite build into dist/web).
dist/.built: node_modules/.installed $(SOURCES) $(WEB_SOURCES)
	rm -rf dist
	npm run build
	bash scripts/build-web.sh
	@touch $@

build: dist/.built

## Start all four roles in one process on the embedded defaults (PGlite, chDB, in-process queue and jobs).
run: build
	node dist/services/main.js

## Build (the dashboard's browser tests need it), lint, type-check, then run the whole test suite
## (embedded defaults, or the services named by the environment). The browser tests need a headless
## Chromium, the QR scan test zbarimg, the exports' reader tests LibreOffice and pdftotext: installed from
## Debian when missing.
test: build lint
	bash scripts/ensure-chromium.sh
	bash scripts/ensure-zbar.sh
	bash scripts/ensure-office-tools.sh
	npx tsc -p tsconfig.json --noEmit
	npx tsc -p tests/ui/tsconfig.json
	npx vitest run

## ESLint (typescript-eslint, type-aware: after the build, which generates the dashboard's API types),
## then Prettier's check of the formatting (`npm run format` fixes it).
lint: build
	npx eslint .
	npx prettier --check .

## Contract tests: a pinned Schemathesis against the platform's own OpenAPI document, every phase and
## check (scripts/contract.sh; docs/development.md, "Contract tests"). 0 failures or it fails.
contract: build
	bash scripts/contract.sh

## Load test (loadtest/run.ts; docs/operations.md, "Load test"): redirects, beacons, an API mix and CSV exports under
## autocannon, each with thresholds, then every visit answered counted in the owners' statistics.
## Starts the platform as `make run` does (built first), or loads BASE_URL when given (no build then).
## LOADTEST_SECONDS a scenario (default 20); loadtest-short is the 3 s version .ci/run runs, its p99
## bounds doubled (3 s of a cold process on a shared machine measure the machine more than the platform).
loadtest: $(if $(BASE_URL),install,build)
	node --import tsx loadtest/run.ts

loadtest-short: $(if $(BASE_URL),install,build)
	LOADTEST_SECONDS=$${LOADTEST_SECONDS:-3} LOADTEST_DRAIN_SECONDS=$${LOADTEST_DRAIN_SECONDS:-60} LOADTEST_P99_FACTOR=$${LOADTEST_P99_FACTOR:-2} \
		node --import tsx loadtest/run.ts

typecheck: build
	npx tsc -p tsconfig.json --noEmit
	npx tsc -p tests/ui/tsconfig.json
	npx tsc -p web/tsconfig.json

## Start PostgreSQL, Redis and a Kafka broker on 127.0.0.1 for the services test run (then: source .services/env).
services:
	bash scripts/services-up.sh

services-down:
	bash scripts/services-down.sh

clean:
	rm -rf dist node_modules/.installed
