# kgen's build. `make test` is what CI runs (see .ci/run); `make gen`
# regenerates gen/ from specs/.

GO ?= go
FUZZTIME ?= 5s

.PHONY: all gen test check unit fuzz bench verify clean cuda

all: gen test

## gen: regenerate gen/ from specs/ (kgen's main job on its own specs)
gen:
	$(GO) run ./cmd/kgen gen

## test: everything CI checks: format, vet, unit and golden tests, fuzz seeds
## plus a few seconds of fuzzing per target, and no drift in gen/
test: check unit fuzz verify

check:
	@out=$$(gofmt -l . | grep -v '/testdata/' || true); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./spec
	$(GO) test -run '^$$' -fuzz '^FuzzFormula$$' -fuzztime $(FUZZTIME) ./expr

## verify: kgen's own CI check on its own specs (drift, keys, coverage)
verify:
	$(GO) run ./cmd/kgen verify

## bench: the generation benchmark over 1000 synthetic specs
bench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./generate

clean:
	$(GO) clean -testcache

## cuda: compile the generated CUDA kernels (gen/cuda/*.cu) with nvcc into
## gen/kernels/cudabin/<kernel>-<hash>.fatbin, which the Go package embeds.
## The one step that needs the CUDA toolkit; gen, test and verify do not.
cuda:
	$(GO) run ./cmd/kgen cuda
