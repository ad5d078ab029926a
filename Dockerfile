# Oja's container image: a static binary (CGO_ENABLED=0) on distroless,
# running as the unprivileged user nonroot (65532), its data in the volume
# /var/lib/oja. Build from a clone (the server uses the client module
# through a replace line):
#
#   docker build -t oja .
#   docker run -d --name oja -p 8080:8080 -p 127.0.0.1:8081:8081 \
#       -v oja-data:/var/lib/oja -e OJA_ADMIN_TOKEN=... oja
#
# Every `oja serve` flag is also OJA_<NAME> in the environment (OJA_DEMO=true,
# OJA_TLS_CERT=...). Publish the admin port on loopback only: it is the
# operator's. README, "Running it in a container".
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY client/go.mod client/go.sum ./client/
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags="-s -w" -o /out/oja ./cmd/oja \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/oja /usr/local/bin/oja
COPY --from=build --chown=65532:65532 /out/data /var/lib/oja
USER 65532:65532
VOLUME /var/lib/oja
EXPOSE 8080 8081
# No shell or curl in the image: oja probe is the check (exit 0 on 2xx).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/oja", "probe", "--timeout", "2s", "http://127.0.0.1:8080/livez"]
# SIGTERM drains and stops cleanly (the same as under systemd).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/oja"]
CMD ["serve", "--data", "/var/lib/oja", "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:8081"]
