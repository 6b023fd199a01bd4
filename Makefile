# gdrcheck: prove GPUDirect RDMA works on GPU clusters.
#
#   make test   install what the tests need (Debian packages) and run every test
#   make run    the main job on the embedded default (see README)
#   make run-fault  the same with one node planted with a fault: exit 1
#   make build  bin/gdrcheck
#   make bench  benchmarks (figures go in issue notes, not in timed tests)
#   make report-screenshot  render the HTML report in headless Chromium

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
# go-nvml's cgo preamble includes nvml.h, whose deprecated declarations
# would drown every build in warnings.
export CGO_ENABLED := 1
export CGO_CFLAGS := -Wno-deprecated-declarations

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/gdrcheck
NODES   := $(patsubst %.ttar,%,$(wildcard fixtures/nodes/*.ttar))
# Debian packages the tests use: xmllint validates JUnit against the xUnit
# schema; gcc builds go-nvml's cgo; prometheus ships promtool, whose
# `check metrics` lints every Prometheus textfile the tests write.
DEBS    := libxml2-utils gcc prometheus

.PHONY: all build test deps vet run bench fixtures fixtures-update clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gdrcheck

deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

test: deps vet
	$(GO) test -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Unpack the fixture nodes (fixtures/nodes/<name>/, git-ignored) for use by
# hand: bin/gdrcheck run --host-root fixtures/nodes/<name>
fixtures: $(NODES)
fixtures/nodes/%: fixtures/nodes/%.ttar
	rm -rf $@ && mkdir -p $@ && $(GO) run ./internal/ttar/cmd/ttar -x -f $< -C $@

# Rewrite the synthetic fixture nodes from harness/node/nodetest.
fixtures-update:
	$(GO) run ./fixtures/gen -out fixtures/nodes

# The main job on the embedded default: a 4-node job on the local Slurm
# cluster (Debian's slurm-wlm on loopback), each node replaying the node
# and nccl-tests runs slurm/localcluster/make-run.cluster names.
run: build
	slurm/localcluster/make-run.sh

# The same cluster with node3 planted with a fault (peer memory missing):
# caught, named and drained; exits 1.
.PHONY: run-fault
run-fault: build
	slurm/localcluster/make-run.sh --fault

clean:
	rm -rf bin out

# The HTML report in headless Chromium (issue 6 acceptance): renders
# out/report.html from a results.json (the recorded 2 x H200 run by default)
# and screenshots it to out/report.png. Installs Debian's chromium when it
# is missing; `make test` never needs it.
REPORT_RESULTS ?= fixtures/results/h200x2-nv18-collectives-negative.results.json
CHROMIUM       ?= chromium
.PHONY: report-screenshot
report-screenshot: build
	@command -v $(CHROMIUM) >/dev/null 2>&1 || { \
		echo "installing: chromium"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; }
	mkdir -p out
	$(BIN) report $(REPORT_RESULTS) --format html --out out/report.html || [ $$? -eq 1 ]
	profile=$$(mktemp -d) && trap 'rm -rf "$$profile"' EXIT && \
	timeout 120 $(CHROMIUM) --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir=$$profile --window-size=1400,2400 --hide-scrollbars \
		--screenshot=out/report.png file://$(abspath out/report.html)
	@echo "screenshot: out/report.png"
