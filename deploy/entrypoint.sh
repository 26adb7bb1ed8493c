#!/bin/sh
# The one start command of a toolgate gateway deployment, for the container (ENTRYPOINT) and the systemd
# unit (ExecStart) alike: the TOOLGATE_* environment variables become `toolgate gateway` options, any
# arguments are appended, and the shell replaces itself with node (so SIGTERM and SIGHUP reach the gateway:
# SIGTERM drains the calls running, SIGHUP reloads the policy). See docs/deploy.md.
set -eu
app=$(cd "$(dirname "$0")/.." && pwd)
: "${TOOLGATE_POLICY:?set TOOLGATE_POLICY to the policy file}"
set -- --policy "$TOOLGATE_POLICY" --http "${TOOLGATE_PORT:-8080}" --host "${TOOLGATE_HOST:-0.0.0.0}" "$@"
[ -n "${TOOLGATE_JWKS_URL:-}" ] && set -- "$@" --jwks-url "$TOOLGATE_JWKS_URL"
[ -n "${TOOLGATE_JWT_ISSUER:-}" ] && set -- "$@" --jwt-issuer "$TOOLGATE_JWT_ISSUER"
[ -n "${TOOLGATE_RESOURCE:-}" ] && set -- "$@" --resource "$TOOLGATE_RESOURCE"
for h in ${TOOLGATE_ALLOWED_HOSTS:-}; do set -- "$@" --allowed-host "$h"; done
for p in ${TOOLGATE_TRUSTED_PROXIES:-}; do set -- "$@" --trusted-proxy "$p"; done
[ -n "${TOOLGATE_TENANT_CLAIM:-}" ] && set -- "$@" --tenant-claim "$TOOLGATE_TENANT_CLAIM"
[ -n "${TOOLGATE_AGENT_CLAIM:-}" ] && set -- "$@" --agent-claim "$TOOLGATE_AGENT_CLAIM"
[ -n "${TOOLGATE_ADMIN_SCOPE:-}" ] && set -- "$@" --admin-scope "$TOOLGATE_ADMIN_SCOPE"
[ -n "${TOOLGATE_COUNTERS_POSTGRES:-}" ] && set -- "$@" --counters-postgres "$TOOLGATE_COUNTERS_POSTGRES"
[ -n "${TOOLGATE_REDIS:-}" ] && set -- "$@" --redis "$TOOLGATE_REDIS"
[ -n "${TOOLGATE_APPROVALS_POSTGRES:-}" ] && set -- "$@" --approvals-postgres "$TOOLGATE_APPROVALS_POSTGRES"
[ -n "${TOOLGATE_AUDIT:-}" ] && set -- "$@" --audit "$TOOLGATE_AUDIT"
[ -n "${TOOLGATE_TLS_CERT:-}" ] && set -- "$@" --tls-cert "$TOOLGATE_TLS_CERT" --tls-key "${TOOLGATE_TLS_KEY:?set TOOLGATE_TLS_KEY with TOOLGATE_TLS_CERT}"
[ "${TOOLGATE_STATELESS:-1}" = "1" ] && set -- "$@" --stateless
# Replicas reload on SIGHUP (or POST /admin/reload), not on file changes: a mounted ConfigMap changes by
# symlink swap, and every replica should take a new policy when it is told to.
set -- "$@" --no-watch
exec node "$app/dist/cli/main.js" gateway "$@"
