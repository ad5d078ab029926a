# Oja — make run serves the demo; make test is what CI runs.
GO      ?= go
DATA    ?= ./data
FUZZTIME ?= 30s
# FUZZMINIMIZETIME bounds the minimising of each new input, which otherwise
# takes up to a minute of a short fuzz run.
FUZZMINIMIZETIME ?= 5s
TORTURE ?= 10m
# STATICCHECK is pinned; `go run pkg@version` fetches it through the module
# proxy into the module cache without touching go.mod.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: run cluster test promtool chromium xmllint screenshots build bench bench-engine fuzz torture clean

## run: serve with the embedded store and sandbox demo data in $(DATA)
##      (more flags: make run ARGS="--webhook-allow-private --markets markets.example.json")
run:
	$(GO) run ./cmd/oja serve --demo --data $(DATA) $(ARGS)

## cluster: three local cluster nodes from cluster.example.json (data in ./data-cluster/n1..n3);
##          Ctrl-C stops all three
cluster: build
	@mkdir -p data-cluster; [ -s data-cluster/admin.token ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' | sed 's/^/oja_admin_/' > data-cluster/admin.token
	@echo "public APIs on 127.0.0.1:8080, :8082, :8084; admin APIs on 127.0.0.1:8081, :8083, :8085"
	@echo "admin token: data-cluster/admin.token; in another shell: export OJA_ADMIN_TOKEN=\$$(cat data-cluster/admin.token)"
	@echo "demo key (sandbox): data-cluster/<first leader>/demo.key, e.g. KEY=\$$(cat data-cluster/n*/demo.key | head -1)"
	@[ -s data-cluster/certs/ca.pem ] || bin/oja cluster certs --cluster cluster.example.json --out data-cluster/certs >/dev/null
	@echo "node certificates (mutual TLS between nodes): data-cluster/certs"
	@export OJA_ADMIN_TOKEN=$$(cat data-cluster/admin.token); pids=; \
		for n in n1 n2 n3; do bin/oja serve --cluster cluster.example.json --node $$n --cluster-tls data-cluster/certs --data data-cluster/$$n --demo & pids="$$pids $$!"; done; \
		trap 'kill $$pids; wait' INT TERM; wait

## test: gofmt, vet, staticcheck, the whole suite with the race detector (fuzz seeds
##       run as unit tests; a short crash torture), the same for the client,
##       bench and generated-client modules (client/, bench/, client/oapigen/,
##       each its own go.mod), then the engine and actors
##       again built with -tags invariants (with -race too: the actors'
##       concurrency tests are tuned to its pace)
test: promtool chromium xmllint
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt would change:" $$unformatted; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) test -race -count=1 ./...
	cd client && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) test -race -count=1 ./...
	cd bench && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) test -race -count=1 ./...
	cd client/oapigen && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./... && $(GO) test -race -count=1 ./...
	$(GO) test -race -tags invariants -count=1 ./engine/ ./actors/

## promtool: install promtool (Debian package prometheus) when it is missing,
##           for the /metrics test's `promtool check metrics`; without it
##           (no root, no apt) that test checks with the Go parser only
promtool:
	@command -v promtool >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get install -y -qq prometheus >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq prometheus >/dev/null 2>&1; }; }; } || \
		echo "promtool not installed: the /metrics test checks with the Go parser only"

## xmllint: install xmllint (Debian package libxml2-utils) when it is missing,
##          for the bank statements' checks against the ISO 20022 schemas;
##          without it (no root, no apt) those checks are skipped outside CI
xmllint:
	@command -v xmllint >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ apt-get install -y -qq libxml2-utils >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq libxml2-utils >/dev/null 2>&1; }; }; } || \
		echo "xmllint not installed: the statements are not checked against the ISO 20022 schemas"

## chromium: install Debian's chromium when it is missing, for the console's
##           browser tests (chromedp); without it (no root, no apt) they are
##           skipped outside CI and fail in CI
chromium:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && \
		{ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || \
		  { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }; }; } || \
		echo "chromium not installed: the console's browser tests are skipped"

## screenshots: the README's console screenshots (docs/console/*.png), taken
##              by the browser test in Debian's chromium
screenshots: chromium
	@mkdir -p docs/console
	OJA_SCREENSHOTS=$(CURDIR)/docs/console $(GO) test -count=1 -run '^TestConsoleBrowser$$' ./gateway/

## build: the oja binary in ./bin, stamped with its commit (oja version)
build:
	$(GO) build -buildvcs=auto -o bin/oja ./cmd/oja

## bench-engine: the engine allocation benchmarks alone (stable names, for benchstat)
bench-engine:
	$(GO) test -run '^$$' -bench 'BenchmarkAllocate' -benchmem -count 5 ./engine/

## bench: the benchmark harness, ~7 min on 2 cores; report.json and charts in bench/results/<timestamp>/
##        (BENCHFLAGS=--quick for a smoke run of seconds; go run -C bench ./ojabench --help for the flags)
bench:
	cd bench && $(GO) run ./ojabench $(BENCHFLAGS)

## fuzz: each fuzz target of each package, the server's and the client's, for $(FUZZTIME)
##       (e.g. make fuzz FUZZTIME=30s). A run that fails with "context deadline exceeded" and
##       writes no failing input is Go's fuzz coordinator missing its own stop on a loaded
##       machine (Go 1.26), not a finding: it is reported and the next target runs. Any
##       other failure stops make.
fuzz:
	@set -e; out=$$(mktemp); trap 'rm -f $$out $$out.rc' EXIT; \
	for mod in . client; do \
		for pkg in $$($(GO) list -C $$mod ./...); do \
			for target in $$($(GO) test -C $$mod -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
				echo "fuzz $$target in $$pkg for $(FUZZTIME)"; \
				{ rc=0; $(GO) test -C $$mod -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) \
					-fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg 2>&1 || rc=$$?; echo $$rc > $$out.rc; } | tee $$out; \
				[ "$$(cat $$out.rc)" = 0 ] && continue; \
				if grep -qx '    context deadline exceeded' $$out && ! grep -q 'Failing input written' $$out; then \
					echo "fuzz $$target: stopped late at the deadline with no failing input (the fuzzer's, not a finding)"; \
					continue; \
				fi; \
				exit 1; \
			done; \
		done; \
	done

## torture: crash, recover and check the actors on Pebble's crashable
##          filesystem for $(TORTURE), with the race detector (make torture TORTURE=10m);
##          then 20 leader kills of a three-process cluster and the linearizability check,
##          then 50 kill -9 rounds of webhook deliveries (every event delivered, in order)
torture:
	$(GO) test -race -run '^TestTorture$$' -count=1 -timeout 0 -v ./actors/ -torture=$(TORTURE)
	$(GO) test -race -run '^TestCluster(Failover|Linearizable)$$' -count=1 -timeout 0 -v ./cmd/oja/ -cluster-rounds=20
	$(GO) test -race -run '^TestWebhooksAtLeastOnce$$' -count=1 -timeout 0 -v ./cmd/oja/ -webhook-rounds=50

clean:
	rm -rf bin
