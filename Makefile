# Oja — make run serves the demo; make test is what CI runs.
GO      ?= go
DATA    ?= ./data
FUZZTIME ?= 30s

.PHONY: run test build bench bench-engine fuzz clean

## run: serve with the embedded store and sandbox demo data in $(DATA)
run:
	$(GO) run ./cmd/oja serve --demo --data $(DATA)

## test: vet and the whole test suite with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

## build: the oja binary in ./bin
build:
	$(GO) build -o bin/oja ./cmd/oja

## bench-engine: the engine allocation benchmarks (stable names)
bench-engine:
	$(GO) test -run '^$$' -bench 'BenchmarkAllocate' -benchmem -count 5 ./engine/

## bench: every benchmark of the repository
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

## fuzz: each fuzz target for $(FUZZTIME)
fuzz:
	@for target in $$($(GO) test -list '^Fuzz' ./... | grep '^Fuzz'); do \
		pkg=$$($(GO) list ./... | while read p; do $(GO) test -list "^$$target$$" $$p 2>/dev/null | grep -q "^$$target$$" && echo $$p; done | head -1); \
		echo "fuzz $$target in $$pkg"; \
		$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	done

clean:
	rm -rf bin
