# gdrcheck: prove GPUDirect RDMA works on GPU clusters.
#
#   make test   install what the tests need (Debian packages) and run every test
#   make run    the main job on the embedded default (see README)
#   make run-fault  the same with one node planted with a fault: exit 1
#   make run-scale  the faulted job on 64 nodes (RUN_NODES=N for another size)
#   make build  bin/gdrcheck
#   make build-all  bin/gdrcheck-linux-amd64 and bin/gdrcheck-linux-arm64 (GH200, GB200)
#   make package  .deb and .rpm packages of those in dist/ (PKG_OUT=DIR for another)
#   make bench  benchmarks (figures go in issue notes, not in timed tests)
#   make fuzz   every fuzz target for FUZZTIME (30s) each: make fuzz FUZZTIME=5m
#   make report-screenshot  render the HTML report in headless Chromium

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
# go-nvml's cgo preamble includes nvml.h, whose deprecated declarations
# would drown every build in warnings.
export CGO_ENABLED := 1
export CGO_CFLAGS := -Wno-deprecated-declarations

GO      ?= go
# The version is the module's, which go build stamps from git (the tag
# HEAD is at, else a pseudo-version of the commit): cmd/gdrcheck/version.go.
# -buildvcs=true overrides a GOFLAGS=-buildvcs=false in go env; a git
# worktree (.git a file) is not stamped by Go, a clone is.
BIN     := bin/gdrcheck
NODES   := $(patsubst %.ttar,%,$(wildcard fixtures/nodes/*.ttar))
# Debian packages the tests use: xmllint validates JUnit against the xUnit
# schema; gcc builds go-nvml's cgo. GH200 and GB200 nodes are aarch64:
# gcc-aarch64-linux-gnu cross-compiles the cgo for linux/arm64 against
# libc6-dev-arm64-cross (the cross compiler only recommends it, and
# --no-install-recommends would leave out the C headers), and
# qemu-user-static runs that binary in the tests: named on the command
# line it needs no binfmt_misc registration, which a container lacks, and
# being static it pulls in no libraries of its own. prometheus ships
# promtool, whose `check metrics` lints every Prometheus textfile the
# tests write and whose `test rules` runs the alert rules over them. rpm
# inspects the .rpm packages (dpkg-deb, dpkg's, the .deb).
DEBS    := libxml2-utils gcc gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static prometheus rpm
# The C compiler for each GOARCH build-all builds (Debian's names; on an
# amd64 host the first is the native gcc).
ARCHES   := amd64 arm64
CC_amd64 ?= x86_64-linux-gnu-gcc
CC_arm64 ?= aarch64-linux-gnu-gcc

.PHONY: run-scale all build build-all $(ARCHES:%=build-linux-%) test deps vet run bench fixtures fixtures-update clean

all: build

build:
	$(GO) build -trimpath -buildvcs=true -o $(BIN) ./cmd/gdrcheck

# One binary per architecture, cgo cross-compiled and still dlopen only:
# bin/gdrcheck-linux-<arch> links libc alone (NVML, libcuda and libibverbs
# are opened when it runs), so it needs no NVIDIA library to build.
build-all: $(ARCHES:%=build-linux-%)
$(ARCHES:%=build-linux-%): build-linux-%: deps
	GOOS=linux GOARCH=$* CC=$(CC_$*) $(GO) build -trimpath -buildvcs=true -o $(BIN)-linux-$* ./cmd/gdrcheck

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

# tools/package is a module of its own (nfpm stays out of gdrcheck's
# dependencies): its test runs make package and installs the .deb.
test: deps vet
	$(GO) test -count=1 -timeout 30m ./...
	cd tools/package && $(GO) vet ./... && $(GO) test -count=1 ./...

# .deb and .rpm packages for every arch of build-all, made by nfpm as a
# library (tools/package): the binary in /usr/bin, the example Slurm cron
# job, the alert rules and the docs under /usr/share/doc/gdrcheck.
PKG_OUT ?= dist
.PHONY: package
package: build-all
	cd tools/package && $(GO) run . -root $(CURDIR) -out $(abspath $(PKG_OUT)) $(ARCHES:%=-arch %)

# BENCH picks benchmarks by name, e.g. make bench BENCH='Collect(1024|4096)Nodes'
# (the 16,384-node jobs write 3 GB of node files each).
BENCH ?= .
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...

# Every fuzz target in the tree, one after the other for FUZZTIME each (go
# test -fuzz takes one target per package per run), then the execs each
# ran. Go minimises each input that finds new coverage for up to 60 s by
# default, which ate whole runs; FUZZMINIMIZETIME caps it (a crasher is
# still minimised, for that long). Go 1.26 can end a run that found
# nothing with "context deadline exceeded" (golang/go#75804, fixed in
# 1.27): only a run that wrote a failing input fails.
FUZZTIME         ?= 30s
FUZZMINIMIZETIME ?= 5s
.PHONY: fuzz
fuzz:
	@set -o pipefail; summary=""; failed=""; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		pkg=./$$(dirname $${f#./}); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$t $$pkg"; \
			if out=$$($(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg 2>&1 | tee /dev/stderr); then \
				st=""; \
			elif grep -q 'context deadline exceeded' <<<"$$out" && ! grep -q 'Failing input written' <<<"$$out"; then \
				st=" (ended by golang/go#75804, nothing found)"; \
			else \
				st=" FAILED"; failed+=" $$t"; \
			fi; \
			n=$$(sed -n 's/.*execs: \([0-9]*\).*/\1/p' <<<"$$out" | tail -1); \
			summary+="$$t $$pkg: $${n:-0} execs$$st"$$'\n'; \
		done; \
	done; \
	echo "== execs in $(FUZZTIME) each"; printf '%s' "$$summary"; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

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

# The faulted job at a size users book: 64 slurmd on loopback, node3
# planted slow and without peer memory; exits 1 naming it. About a
# minute on two cores, so not part of make test.
RUN_NODES ?= 64
run-scale: build
	slurm/localcluster/make-run.sh --fault --nodes $(RUN_NODES)

clean:
	rm -rf bin out dist

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
