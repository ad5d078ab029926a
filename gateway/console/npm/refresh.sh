#!/bin/sh
# Refreshes the console's vendored browser assets (gateway/console/static/
# vendor) from the versions pinned in package-lock.json. Run by
# `go generate ./gateway` on a machine with npm; go build and make test
# never run it (the minified files and their licences are committed).
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp package.json package-lock.json "$tmp"
(cd "$tmp" && npm ci --no-audit --no-fund --ignore-scripts >/dev/null)
nm=$tmp/node_modules
out=../static/vendor
cp "$nm/htmx.org/dist/htmx.min.js" "$out/htmx.min.js"
cp "$nm/htmx.org/LICENSE" "$out/htmx.LICENSE"
cp "$nm/uplot/dist/uPlot.iife.min.js" "$out/uPlot.iife.min.js"
cp "$nm/uplot/dist/uPlot.min.css" "$out/uPlot.min.css"
cp "$nm/uplot/LICENSE" "$out/uPlot.LICENSE"
echo "refreshed $out from package-lock.json"
