#!/usr/bin/env bash
# Docker engine + the offline test image for the `docker`-marked tests.
#
# Installs Debian's docker.io (and tini, busybox-static for the image) when missing, starts
# dockerd in the background when no engine answers, waits for it (bounded), and builds the
# --from-local image skilllift-test:local when it is missing. Always exits 0: when docker
# cannot run here the docker tests skip, and this script says why.
set -uo pipefail
cd "$(dirname "$0")/.."

TAG="${SKILLLIFT_TEST_IMAGE:-skilllift-test:local}"
WAIT_S="${DOCKER_WAIT_S:-60}"
LOG="${DOCKERD_LOG:-/tmp/dockerd.log}"

say() { echo "docker-setup: $*"; }
give_up() { say "$* — docker tests will be skipped"; exit 0; }

# The project's Python: CI's fresh venv, else this machine's, else the system one.
PY="${PYTHON:-}"
for candidate in .venv/bin/python /opt/venv/bin/python python3; do
  [ -n "$PY" ] && break
  command -v "$candidate" >/dev/null 2>&1 && PY="$candidate"
done

engine_up() { timeout 10 docker info >/dev/null 2>&1; }

# 1. Packages (only what is missing; apt needs root, which CI and sessions are).
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v tini >/dev/null 2>&1 || missing+=(tini)
command -v busybox >/dev/null 2>&1 || missing+=(busybox-static)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    say "not root: cannot apt-get install ${missing[*]}"
  else
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null 2>&1 || say "apt-get update failed"
    apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 || say "apt-get install failed"
  fi
fi
command -v docker >/dev/null 2>&1 || give_up "no docker client"

# 2. The engine: an existing one (DOCKER_HOST or the local socket), else start dockerd.
if ! engine_up; then
  if [ -n "${DOCKER_HOST:-}" ]; then
    give_up "DOCKER_HOST=$DOCKER_HOST does not answer"
  fi
  command -v dockerd >/dev/null 2>&1 || give_up "dockerd is not installed"
  # A pid file left by a dockerd that was killed would stop the new one from starting.
  if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  say "starting dockerd (log: $LOG)"
  nohup dockerd >"$LOG" 2>&1 &
  for _ in $(seq 1 "$WAIT_S"); do
    engine_up && break
    sleep 1
  done
  engine_up || { tail -n 20 "$LOG" 2>/dev/null; give_up "dockerd did not answer within ${WAIT_S}s"; }
fi
say "engine up: $(docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}' 2>/dev/null)"

# 3. The offline test image (a few seconds: docker import of the bundled CLI).
if docker image inspect "$TAG" >/dev/null 2>&1; then
  say "image $TAG present"
elif [ -z "$PY" ]; then
  give_up "no Python to build $TAG with"
else
  say "building $TAG (--from-local)"
  "$PY" -m pytest_skilllift.cli.image build --tag "$TAG" --from-local \
    || give_up "building $TAG failed"
fi
exit 0
