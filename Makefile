# kgen's build. `make test` is what CI runs (.ci/run calls nothing else): it
# installs what the tests need first (scripts/test-deps). `make test-long`
# adds the slow, exhaustive runs. `make gen` regenerates gen/ from specs/.

GO ?= go
# Fuzzing runs a fixed number of inputs, not a fixed time: a time budget
# fails with "context deadline exceeded" when a loaded machine starts the
# fuzz workers late. `make test-long` fuzzes LONG_FUZZTIME inputs.
FUZZTIME ?= 10000x
LONG_FUZZTIME ?= 50000x
# FuzzPrepass reads whole kernel sources (its seeds are the realistic
# .metal files of verify/mslcpu/testdata) with the harness's regular
# expressions: a thousand times a parser's cost per input, 30 s of the
# default run at 10,000. 2,000 here; `make test-long` gives it
# LONG_FUZZTIME like the others.
PREPASS_FUZZTIME ?= 2000x
# TIMEOUT bounds each test package: at least three times the slowest
# package's time on two cores under a load average of 8 (README, "Tests"),
# so a timeout means a hang, not a busy machine. The slowest is e2e/cudacpu
# when its sanitizer builds are cold (460 s of CPU): 17 minutes of wall
# time on 2026-12-02 at a load of 3-7 (three engineers' builds beside it),
# and 29 minutes once at a load near 15; with warm caches the slowest is
# verify/parity, 190 s of CPU (about 130 s of wall time at load 3-7). 60m
# is three times the cold case at load 8. The long runs take longer
# (TestPreludeExhaustive alone is about 17 minutes).
TIMEOUT ?= 60m
LONG_TIMEOUT ?= 120m

# WITH_NVCC passes $KGEN_NVCC, or else the nvcc scripts/cuda-tools installs
# from PyPI (best effort; empty when it cannot: the CUDA compile tests skip).
WITH_NVCC = KGEN_NVCC="$${KGEN_NVCC:-$$(./scripts/cuda-tools)}"

.PHONY: all gen test test-long deps check unit fuzz bench verify clean cuda

all: gen test

## gen: regenerate gen/ from specs/ (kgen's main job on its own specs)
gen:
	$(GO) run ./cmd/kgen gen

## test: everything CI checks: format, vet, unit and golden tests, fuzz seeds
## plus 10,000 fuzzed inputs per target, and no drift in gen/
test: deps check unit fuzz verify

## test-long: `make test` plus the slow, exhaustive runs (KGEN_LONG=1: the
## largest shapes, full sweeps, the CUDA grid loop on the CPU, every float32
## input of the MSL prelude) and 50,000 fuzzed inputs per target
test-long:
	KGEN_LONG=1 $(MAKE) test FUZZTIME=$(LONG_FUZZTIME) PREPASS_FUZZTIME=$(LONG_FUZZTIME) TIMEOUT=$(LONG_TIMEOUT)

## deps: install clang-19, its sanitizer runtimes and llvm-symbolizer (as
## root with apt-get), else stop with the command to run
deps:
	@./scripts/test-deps

check:
	@out=$$(gofmt -l . | grep -v '/testdata/' || true); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## unit: every package's tests; the CUDA compile tests get nvcc from PyPI
## (scripts/cuda-tools, best effort) unless $KGEN_NVCC names one
unit:
	$(WITH_NVCC) $(GO) test -count=1 -timeout $(TIMEOUT) $(SLOW) ./...

# SLOW are the packages that take longest, named before ./... so that go
# test, which runs two packages at once on two cores and starts them in
# the order named, starts them first: the run then ends with several
# short packages side by side, not with one long one alone.
SLOW = ./verify/parity ./e2e/cudacpu ./e2e ./e2e/hipcpu ./tests

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./spec
	$(GO) test -run '^$$' -fuzz '^FuzzFormula$$' -fuzztime $(FUZZTIME) ./expr
	$(GO) test -run '^$$' -fuzz '^FuzzPrepass$$' -fuzztime $(PREPASS_FUZZTIME) ./verify/mslcpu

## verify: kgen's own CI check on its own specs (drift, keys, coverage; the
## generated CUDA and each CUTLASS matmul's first part compiled by nvcc where
## scripts/cuda-tools provides them)
verify:
	$(WITH_NVCC) KGEN_CUTLASS="$${KGEN_CUTLASS:-$$(./scripts/cuda-tools cutlass)}" $(GO) run ./cmd/kgen verify

## bench: the generation benchmark over 1000 synthetic specs
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./generate

clean:
	$(GO) clean -testcache

## cuda: compile the generated CUDA kernels (gen/cuda/*.cu) with nvcc into
## gen/kernels/cudabin/<kernel>-<hash>.fatbin (matmuls: <kernel>-<hash>.so,
## CUTLASS headers from $KGEN_CUTLASS), which the Go package embeds.
## The one step that needs the CUDA toolkit; gen, test and verify do not.
cuda:
	$(GO) run ./cmd/kgen cuda
