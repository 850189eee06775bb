# Conch: `make help` lists the targets. `make build` and `make run` install
# what building needs first (scripts/setup), `make test` also what the tests
# need (scripts/setup --test); both are quick when everything is there.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Go lives in /usr/local/go on our machines; a non-login shell may lack it.
ifeq ($(shell command -v go),)
export PATH := /usr/local/go/bin:$(PATH)
endif

BIN        := build/bin/conch
# The browser tests' scripted model servers for the real coding-agent CLIs.
AGENTSERVERS := build/bin/agentservers
SSHHOST := build/bin/sshhost
ARTIFACTS  := build/test-artifacts
GO_TAGS    := desktop,production,webkit2_41
# Windows' window needs no webkit tag; it cannot run here, so `make test`
# and `make lint` cross-compile and vet it (Wails builds it without cgo).
WIN_TAGS   := desktop,production
WIN        := env GOOS=windows GOARCH=amd64 CGO_ENABLED=0
# The one version number (scripts/version: the tag, else wails.json's and the
# commit), stamped into the binary with the commit and the build date
# ($SOURCE_DATE_EPOCH when set, for a reproducible build).
VERSION    := $(shell scripts/version)
COMMIT     := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE := $(shell date -u $(if $(SOURCE_DATE_EPOCH),-d @$(SOURCE_DATE_EPOCH),) +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG := conch/backend/version
LDFLAGS    := -w -s -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(BUILD_DATE)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME   ?= 10s
CRASH_ROUNDS ?= 200
ARGS       ?=
STEP       := scripts/step
# In CI, run every test again: a cached pass may predate a binary that an
# integration test starts, which go test's cache does not track.
GOTESTFLAGS ?= -race -timeout 10m $(if $(CI),-count=1,)
# The Windows installer (NSIS): the exe it installs, where it goes, and the
# toasts' identity it registers, read from the code that uses it. The
# evergreen WebView2 bootstrapper is embedded when it is at WEBVIEW2_SETUP
# (the release workflow fetches it); else the installer fetches it, only
# when WebView2 is missing.
DIST       := build/dist
WIN_EXE    := build/bin/conch.exe
WIN_SETUP  := $(DIST)/conch-$(VERSION)-setup.exe
WEBVIEW2_SETUP := build/windows/MicrosoftEdgeWebview2Setup.exe
TOAST_GO   := backend/notify/toast_windows.go
NSIS_DEFINES = -DVERSION=$(VERSION) -DVERSION_BASE=$(shell scripts/version --base) \
	-DEXE=../bin/conch.exe -DOUTFILE=../dist/$(notdir $(WIN_SETUP)) \
	-DAPP_ID=$(shell sed -n 's/^const ToastAppID = "\(.*\)"$$/\1/p' $(TOAST_GO)) \
	-DTOAST_CLSID=$(shell sed -n 's/^const toastActivatorCLSID = "\(.*\)"$$/\1/p' $(TOAST_GO)) \
	$(if $(wildcard $(WEBVIEW2_SETUP)),-DWEBVIEW2_BOOTSTRAPPER=$(notdir $(WEBVIEW2_SETUP)))

.PHONY: help setup setup-test build frontend run test test-go dist dist-linux dist-test dist-test-only e2e e2e-only smoke lint bench load fuzz crash version icon clean \
	dist-windows windows-installer dist-windows-test remote

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  make %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

setup: ## install what building needs and is missing: apt packages (Debian/Ubuntu), npm packages, Go modules
	@scripts/setup

setup-test: ## install what the tests need too: test apt packages (Xvfb, Chromium, Wine, ...), the coding-agent CLIs
	@scripts/setup --test

frontend: ## build the frontend into frontend/dist
	npm --prefix frontend run build

build: setup frontend ## build the desktop binary build/bin/conch (frontend first; no wails CLI needed)
	@[ -n "$(VERSION)" ] || { scripts/version; echo "make build: scripts/version gave no version" >&2; exit 1; }
	go build -buildmode=pie -tags $(GO_TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) .

run: build ## build and start Conch: the window with a display, else `conch serve` (ARGS="--home DIR")
	@if [ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ]; then \
		exec $(BIN) $(ARGS); \
	else \
		echo "make run: no display; starting conch serve"; \
		exec $(BIN) serve $(ARGS); \
	fi

test: setup-test ## everything CI runs: gofmt, vet (also for Windows), Windows build, Go tests (-race), frontend check, lint and tests, build, the .deb installed and removed, browser e2e, desktop smoke, the Windows installer under Wine
	@$(STEP) "gofmt" sh -c 'out=$$(gofmt -l $$(git ls-files "*.go")); [ -z "$$out" ] || { echo "gofmt would change: $$out"; exit 1; }'
	@$(STEP) "go vet" go vet ./...
	@$(STEP) "go vet (windows, plain and desktop tags)" sh -c '$(WIN) go vet ./... && $(WIN) go vet -tags $(WIN_TAGS) ./...'
	@$(STEP) "build (windows)" $(WIN) go build -tags $(WIN_TAGS) -o /dev/null .
	@$(STEP) "go test -race" go test $(GOTESTFLAGS) ./...
	@$(STEP) "frontend check" npm --prefix frontend run check
	@$(STEP) "frontend lint" npm --prefix frontend run lint
	@$(STEP) "frontend test" npm --prefix frontend test
	@$(STEP) "build" $(MAKE) --no-print-directory build
	@$(STEP) "remote (the runner's static builds for hosts)" $(MAKE) --no-print-directory remote
	@$(STEP) "dist test (.deb installed, linted, removed; .rpm listed)" $(MAKE) --no-print-directory dist-test-only
	@$(STEP) "browser e2e" $(MAKE) --no-print-directory e2e-only
	@$(STEP) "desktop smoke" scripts/desktop-smoke
	@$(STEP) "windows installer (wine)" sh -c '$(MAKE) --no-print-directory windows-installer && scripts/windows-installer-test $(WIN_SETUP) $(WIN_EXE) $(VERSION)'
	@echo "make test: all steps passed"

# The packages, into build/dist/: each system's part is a target of its own
# (dist-linux here, dist-windows below; macOS's bundle is built by the release
# workflow). dist is this system's: the release workflow's Linux job runs it.
dist: dist-linux ## build this system's packages into build/dist/ (Linux: the .deb and the .rpm; Windows' installer is make dist-windows)

dist-linux: build remote ## build conch_<version>_amd64.deb and conch-<version>.x86_64.rpm into build/dist/ (nfpm), the runner's builds for hosts in them
	scripts/dist linux

dist-test: build remote dist-test-only ## build the Linux packages, install the .deb for real (root), run it, lint it, remove it; list the .rpm

dist-test-only:
	scripts/dist linux
	scripts/dist-test

remote: ## the static Linux conch a host runs (conch runner): build/remote/<version>/conch-linux-{amd64,arm64}, a .sha256 beside each; no cgo, no desktop tags, checked
	@[ -n "$(VERSION)" ] || { scripts/version; echo "make remote: scripts/version gave no version" >&2; exit 1; }
	scripts/remote $(VERSION) "$(LDFLAGS)"

test-go: ## only the Go tests, with the race detector
	go test $(GOTESTFLAGS) ./...

e2e: build remote e2e-only ## only the browser e2e tests against build/bin/conch serve (and the runner it copies to a host)

e2e-only:
	go build -o $(AGENTSERVERS) ./backend/testrig/agentrig/agentservers
	go build -o $(SSHHOST) ./backend/testrig/sshd/sshhost
	CONCH_BIN=$(CURDIR)/$(BIN) CONCH_AGENT_SERVERS=$(CURDIR)/$(AGENTSERVERS) CONCH_SSH_HOST=$(CURDIR)/$(SSHHOST) npm --prefix frontend run e2e

smoke: build ## only the desktop smoke test (Xvfb; screenshot in build/test-artifacts)
	scripts/desktop-smoke

lint: ## gofmt, go vet (also for Windows) and staticcheck (plain and desktop tags), frontend check and ESLint, shellcheck, actionlint; reports every failure
	@rc=0; \
	$(STEP) "gofmt" sh -c 'out=$$(gofmt -l $$(git ls-files "*.go")); [ -z "$$out" ] || { echo "gofmt would change: $$out"; exit 1; }' || rc=1; \
	$(STEP) "go vet" go vet ./... || rc=1; \
	$(STEP) "go vet (desktop)" go vet -tags $(GO_TAGS) ./... || rc=1; \
	$(STEP) "go vet (windows, plain and desktop tags)" sh -c '$(WIN) go vet ./... && $(WIN) go vet -tags $(WIN_TAGS) ./...' || rc=1; \
	$(STEP) "staticcheck (plain and desktop tags)" sh -c 'printf "plain:\ndesktop: -tags=$(GO_TAGS)\n" | go run $(STATICCHECK) -matrix ./...' || rc=1; \
	$(STEP) "frontend check" npm --prefix frontend run check || rc=1; \
	$(STEP) "frontend lint" npm --prefix frontend run lint || rc=1; \
	$(STEP) "shellcheck" shellcheck $$(find scripts -maxdepth 1 -type f) .ci/run || rc=1; \
	$(STEP) "actionlint (the release workflow)" go tool actionlint || rc=1; \
	exit $$rc

load: build ## 200 loopback clients on a real conch serve for 60 s: latency percentiles; fails on any 5xx or unanswered request
	go run ./backend/devcmd/load -bin $(BIN) -clients 200 -duration 60s

bench: build ## the benchmarks and the UI frame-time run: one table against the machine's limits (build/bench.txt)
	scripts/bench

crash: ## the crash test at length: SIGKILL a real conch serve CRASH_ROUNDS times (default 200; CONCH_CRASH_SEED replays)
	CONCH_CRASH_ROUNDS=$(CRASH_ROUNDS) go test -race -count=1 -timeout 90m -run '^TestCrashesLoseNothing$$' -v ./backend/integration/

fuzz: ## run every Fuzz* target for FUZZTIME each (default 10s)
	@scripts/fuzz $(FUZZTIME)

version: ## print the version every build and package uses (scripts/version)
	@echo $(VERSION)

dist-windows: setup frontend windows-installer ## the Windows installer build/dist/conch-VERSION-setup.exe (NSIS, per user; cross-compiled)

windows-installer:
	$(WIN) go build -tags $(WIN_TAGS) -ldflags "$(LDFLAGS) -H windowsgui" -o $(WIN_EXE) .
	@mkdir -p $(DIST)
	makensis -V2 $(NSIS_DEFINES) build/windows/installer.nsi
	@echo "dist-windows: $(WIN_SETUP)"

dist-windows-test: dist-windows ## build the Windows installer, install and uninstall it silently under Wine and check both
	scripts/windows-installer-test $(WIN_SETUP) $(WIN_EXE) $(VERSION)

icon: ## redraw the app icon (build/appicon.png and the window icon in backend/desktop)
	scripts/icon

clean: ## remove build outputs (build/bin, build/dist, build/remote, build/test-artifacts, frontend/dist's build)
	rm -rf build/bin build/dist build/remote $(ARTIFACTS) build/.cache
	find frontend/dist -mindepth 1 ! -name .gitkeep -delete 2>/dev/null || true
