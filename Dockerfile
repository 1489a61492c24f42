# syntax=docker/dockerfile:1
#
# The strata binary in a small image that runs as a non-root user. Built by
# docker-compose.yml; by hand: docker build -t strata .
#
#   docker run -p 9092:9092 -p 9644:9644 strata     a single agent, data in /var/lib/strata/data
#
# The final image is Alpine rather than distroless for its busybox wget,
# which the compose healthcheck uses to ask /readyz.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
# go.mod replaces memberlist with the patched copy here.
COPY third_party third_party
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
	--mount=type=cache,target=/root/.cache/go-build \
	CGO_ENABLED=0 go build -trimpath -o /strata ./cmd/strata

FROM alpine:3.22
# A fixed uid, and a data directory it owns: a named volume mounted there
# starts as a copy of it, so the agent can write to the volume.
RUN adduser -D -H -u 10001 strata \
	&& mkdir -p /var/lib/strata \
	&& chown strata:strata /var/lib/strata
COPY --from=build /strata /strata
USER strata
WORKDIR /var/lib/strata
# Kafka, HTTP (/metrics, /readyz), gossip (TCP and UDP).
EXPOSE 9092 9644 7946 7946/udp
ENTRYPOINT ["/strata"]
CMD ["agent"]
