#!/usr/bin/env bash
# Start PostgreSQL and Redis on loopback when they are installed here but not running, and install HAProxy (the
# load balancer of the replicas test) and Chromium (the web app's browser tests; never a downloaded browser) when
# they are missing and apt-get can install them. Never fatal: tests skip (or, with CI=true, fail) with a message
# when a service is still missing.
set -u

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if ! port_open 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  else
    echo "PostgreSQL is not running and cannot be started here; its tests will skip" >&2
  fi
fi

if ! port_open 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
  else
    echo "Redis is not running and cannot be started here; its tests will skip" >&2
  fi
fi

if ! command -v haproxy >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing HAProxy (apt-get)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy; } >/dev/null || true
  fi
  command -v haproxy >/dev/null 2>&1 ||
    echo "HAProxy is not installed and cannot be installed here; the replicas test will skip" >&2
fi

CHROMIUM="${DYNAFORGE_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "installing Chromium (apt-get) for the web app's browser tests"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null || true
  fi
  [ -x "$CHROMIUM" ] ||
    echo "Chromium is not installed at $CHROMIUM and cannot be installed here; the browser tests will skip" >&2
fi

for _ in $(seq 1 30); do
  port_open 5432 && break
  sleep 1
done
exit 0
