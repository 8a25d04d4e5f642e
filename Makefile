# The two commands of the quickstart: `make run` and `make test`. Each installs what it needs.
SHELL := /bin/bash
SOURCES := $(shell find services shared scripts -name '*.ts' -not -name '*.test.ts' 2>/dev/null) package.json tsconfig.json tsconfig.build.json

.PHONY: run test typecheck build install services services-down clean

node_modules/.installed: package.json package-lock.json
	# npm install, not npm ci: npm 11 writes lock files without other platforms' optional packages
	# (chDB, rollup) and npm ci then refuses them as out of sync. The lock file still pins every version.
	npm install --no-audit --no-fund --loglevel=error
	@touch $@

install: node_modules/.installed

dist/.built: node_modules/.installed $(SOURCES)
	rm -rf dist
	npx tsc -p tsconfig.build.json
	@touch $@

build: dist/.built

## Start all four roles in one process on the embedded defaults (PGlite, chDB, in-process queue and jobs).
run: build
	node dist/services/main.js

## Type-check, then run the whole test suite (embedded defaults, or the services named by the environment).
## The beacon's browser test needs a headless Chromium: installed from Debian when missing.
test: install
	bash scripts/ensure-chromium.sh
	npx tsc -p tsconfig.json --noEmit
	npx vitest run

typecheck: install
	npx tsc -p tsconfig.json --noEmit

## Start PostgreSQL, Redis and a Kafka broker on 127.0.0.1 for the services test run (then: source .services/env).
services:
	bash scripts/services-up.sh

services-down:
	bash scripts/services-down.sh

clean:
	rm -rf dist node_modules/.installed
